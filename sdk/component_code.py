"""The code of a component file (sdk/component.py): its files, their digest (an edited script is
another component: its outputs are not reused), the copy a node runs, and the component files of a
folder. Imports nothing of the project but the SDK."""
from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

from sdk import azure_component

FILE_NAME = "component.yaml"
# not code: left out of the digest and of the copy a node runs
IGNORED = ("__pycache__", ".git", "*.pyc")

_FILE_DIGESTS: dict[tuple[str, int, int], str] = {}


def _file_digest(path: Path) -> str:
    st = path.stat()
    key = (str(path), st.st_mtime_ns, st.st_size)
    known = _FILE_DIGESTS.get(key)
    if known is None:
        h = hashlib.sha256()
        with path.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        if len(_FILE_DIGESTS) > 50_000:
            _FILE_DIGESTS.clear()
        known = _FILE_DIGESTS[key] = h.hexdigest()
    return known


def code_files(folder: Path) -> list[Path]:
    """The files of a code folder (sorted), without caches and version control."""
    ignore = shutil.ignore_patterns(*IGNORED)
    found = []
    for top, dirs, files in os.walk(folder):
        dropped = ignore(top, dirs + files)
        dirs[:] = sorted(d for d in dirs if d not in dropped)
        found += [Path(top) / f for f in sorted(files) if f not in dropped]
    return found


def digest(spec) -> str:
    """sha256 of the component file and of every file of its code folder (names and bytes): an
    edited script makes another digest, so that its outputs are not reused."""
    h = hashlib.sha256(f"{FILE_NAME}\0{_file_digest(spec.file)}\0".encode())
    for path in code_files(spec.code):
        h.update(f"{path.relative_to(spec.code).as_posix()}\0{_file_digest(path)}\0".encode())
    return h.hexdigest()


def copy_code(spec, destination: Path) -> Path:
    """A fresh copy of the code folder at `destination` (what a node runs, in its own folder)."""
    destination = Path(destination)
    shutil.rmtree(destination, ignore_errors=True)
    shutil.copytree(spec.code, destination, ignore=shutil.ignore_patterns(*IGNORED))
    return destination


def find(folder) -> list[Path]:
    """Every component.yaml below `folder`, and every Azure ML v2 command component file (any
    `*.yml` or `*.yaml` whose $schema is commandComponent's: is_v2_file), sorted; none when the
    folder does not exist."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.rglob("*.y*ml") if p.is_file() and not set(p.parts) & {"__pycache__", ".git"}
                  and (p.name == FILE_NAME or azure_component.is_v2_file(p, FILE_NAME)))
