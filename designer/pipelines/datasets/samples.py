"""The sample datasets a new installation offers, made here from data bundled with the installed
packages (no download): `digits`, scikit-learn's 1,797 handwritten digits (8 x 8, 16 grey levels)
as one folder of PNGs per class, the image folder Convert to Image Directory reads.

`make run` adds them to the first user (`manage.py add_sample_datasets`), so that the tour's
pipeline, examples/digits.json, which names its dataset `digits`, submits as imported. The tests
and benchmarks make their digits images with the same function. Pillow and scikit-learn only:
the web process never imports torch.
"""
from __future__ import annotations

import tempfile
import zipfile
from pathlib import Path

DIGITS = "digits"
DIGITS_SIZE = 32  # pixels a side: what examples/digits.json's Resize keeps


def digits_folder(root, per_class: int | None = None, size: int = DIGITS_SIZE) -> Path:
    """Write the 1,797 8x8 digits of scikit-learn (or `per_class` of each) as `size` x `size`
    grayscale PNGs, one sub-folder per class (0..9). Deterministic: the first images of each class."""
    import numpy as np
    from PIL import Image
    from sklearn.datasets import load_digits

    root = Path(root)
    digits = load_digits()
    written: dict[int, int] = {}
    for pixels, label in zip(digits.images, digits.target):
        label = int(label)
        if per_class is not None and written.get(label, 0) >= per_class:
            continue
        n = written.get(label, 0)
        img = Image.fromarray((pixels * (255 / 16)).astype(np.uint8), mode="L").resize((size, size), Image.BILINEAR)
        (root / str(label)).mkdir(parents=True, exist_ok=True)
        img.save(root / str(label) / f"{n:04d}.png")
        written[label] = n + 1
    return root


def digits_archive(path) -> Path:
    """The digits as a zip of class folders (`0/0000.png` ...), as a user would upload them."""
    path = Path(path)
    with tempfile.TemporaryDirectory() as tmp:
        folder = digits_folder(Path(tmp) / DIGITS)
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
            for f in sorted(p for p in folder.rglob("*") if p.is_file()):
                z.write(f, f.relative_to(folder).as_posix())
    return path
