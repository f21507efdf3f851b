"""Real image sets for tests: scikit-learn's bundled digits as an ImageFolder tree, and archives.

    digits_folder(root, per_class=None, size=32) -> root       root/<digit>/<n>.png (grayscale)
    make_archive(folder, path, fmt, wrap=None) -> path         fmt: zip, tar, tar.gz, tar.bz2

The digits are made by the product's own code (the sample dataset `make run` adds), so that the
tests train on the images a user gets.
"""
from __future__ import annotations

import tarfile
import zipfile
from pathlib import Path

from designer.pipelines.datasets.samples import digits_folder  # noqa: F401 - for the tests and benchmarks

TAR_MODES = {"tar": "w", "tar.gz": "w:gz", "tgz": "w:gz", "tar.bz2": "w:bz2"}


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
