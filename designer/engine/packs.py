"""Packs: a tree's small files kept in a bucket as a few objects, not one object each.

An image folder of 100,000 small JPEGs would cost 100,000 requests each way (tens of ms apiece on
any S3 server): a tree's files under PACK_FILE_BYTES are concatenated, in the tree's order, into
packs of at most PACK_BYTES (WebDataset's and FFCV's shards, Kubeflow's archived artifacts, for
the same reason). A pack is plain bytes, no archive format: the tree's manifest gives each packed
file its pack and offset, so one file is read with one ranged GET (a thumbnail, a download) and a
whole tree with one GET per pack. Pack keys carry the upload's id (`_packs/<tree>/<upload>-<n>`):
a manifest read before its tree was deleted and written again names packs that no longer exist,
never another upload's bytes.
"""
from __future__ import annotations

import os
from pathlib import Path

from designer.engine.store import PACKS

PACK_FILE_BYTES = 1024 * 1024  # a file smaller than this goes into a pack
PACK_BYTES = 16 * 1024 * 1024  # a pack's size at most (read into memory whole, one per transfer thread)


def plan(files: dict[str, dict]) -> tuple[list[list[str]], list[str]]:
    """The small files of a tree in packs (each a list of relative paths, in order), and the
    others, each an object of its own."""
    packs: list[list[str]] = []
    size = 0
    alone = []
    for rel, f in files.items():
        n = int(f["size"])
        if n >= PACK_FILE_BYTES:
            alone.append(rel)
            continue
        if not packs or size + n > PACK_BYTES:
            packs.append([])
            size = 0
        packs[-1].append(rel)
        size += n
    return packs, alone


def pack_key(tree: str, name: str) -> str:
    return f"{PACKS}/{tree}/{name}"


def read(folder: Path, rels: list[str], files: dict[str, dict], name: str) -> bytes:
    """The pack of `rels` (files of `folder`); records each one's pack and offset in `files`."""
    parts = []
    offset = 0
    for rel in rels:
        data = (folder / rel).read_bytes()
        if len(data) != int(files[rel]["size"]):
            raise OSError(f"{rel} changed while it was being kept ({len(data)} bytes, {files[rel]['size']} scanned)")
        files[rel].update(pack=name, offset=offset)
        parts.append(data)
        offset += len(data)
    return b"".join(parts)


def split(data: bytes, members: list[tuple[str, dict]], dest: Path) -> None:
    """Write each member (relative path, manifest entry) of a pack's bytes under `dest`."""
    for rel, f in members:
        start, size = int(f["offset"]), int(f["size"])
        piece = data[start:start + size]
        if len(piece) != size:
            raise OSError(f"{rel}: its pack holds {len(piece)} of its {size} bytes")
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "wb") as out:
            out.write(piece)


def members(files: dict[str, dict]) -> dict[str, list[tuple[str, dict]]]:
    """{pack name: [(relative path, entry), ...]} of a manifest's packed files."""
    found: dict[str, list[tuple[str, dict]]] = {}
    for rel, f in files.items():
        if f.get("pack"):
            found.setdefault(str(f["pack"]), []).append((rel, f))
    return found


def unpack_in_folder(root: Path, tree: str, files: dict[str, dict]) -> int:
    """A folder store's copy of a packed tree (manage.py copy_store into a folder): each packed
    file written out of its pack (`<root>/_packs/...`) where it is missing; how many were."""
    written = 0
    for name, entries in members(files).items():
        todo = [(rel, f) for rel, f in entries
                if not (root / tree / rel).is_file() or (root / tree / rel).stat().st_size != int(f["size"])]
        if todo:
            split((root / PACKS / tree / name).read_bytes(), todo, root / tree)
            written += len(todo)
    return written


def upload_id() -> str:
    return os.urandom(6).hex()
