"""Real image sets for tests: scikit-learn's bundled digits as an ImageFolder tree, and archives.

    digits_folder(root, per_class=None, size=32) -> root       root/<digit>/<n>.png (grayscale)
    make_archive(folder, path, fmt, wrap=None) -> path         fmt: zip, tar, tar.gz, tar.bz2
"""
from __future__ import annotations

import tarfile
import zipfile
from pathlib import Path

import numpy as np
from PIL import Image

TAR_MODES = {"tar": "w", "tar.gz": "w:gz", "tgz": "w:gz", "tar.bz2": "w:bz2"}


def digits_folder(root, per_class: int | None = None, size: int = 32) -> Path:
    """Write the 1,797 8x8 digits of scikit-learn (or `per_class` of each) as `size` x `size`
    grayscale PNGs, one sub-folder per class (0..9). Deterministic: the first images of each class."""
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


def make_archive(folder, path, fmt: str = "zip", wrap: str | None = None) -> Path:
    """Archive every file under `folder`, entry names relative to it (under `wrap/` if given)."""
    folder, path = Path(folder), Path(path)
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    names = [(p, f"{wrap}/{p.relative_to(folder).as_posix()}" if wrap else p.relative_to(folder).as_posix()) for p in files]
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "zip":
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
            for p, name in names:
                z.write(p, name)
    elif fmt in TAR_MODES:
        with tarfile.open(path, TAR_MODES[fmt]) as t:
            for p, name in names:
                t.add(p, name)
    else:
        raise ValueError(f"unknown archive format {fmt!r}: zip, tar, tar.gz or tar.bz2")
    return path
