"""The artifact store: one interface for where every artifact lives, a local folder or an
S3-compatible bucket (AWS S3, SeaweedFS, Ceph RGW, Garage, MinIO).

Code that runs a node asks for "this node's inputs, here" (artifact_cache.py fetches them) and
"keep these outputs" (`upload_tree`); the web app reads what a run left through `open`,
`read_range` and `manifest`. Nothing outside this module builds a path into the store or calls
boto3.

Keys are POSIX paths relative to the store's root, laid out as designer/engine/paths.py says
(`<run id>/<node id>/<port>`, `<run id>/<node id>/logs/<file>`, `datasets/...`, `models/...`,
`components/...`). A *tree* is a folder kept as a whole (a node's output): its files are uploaded
first (in a bucket, its small files together in a few packs: packs.py) and its manifest last (`_manifests/<key>.json`: every file with its size and SHA-256, and
the other trees its files refer to). A tree without a manifest does not exist for any reader, so
a worker killed half way through an upload leaves nothing that can be read or reused.

LocalStore keeps the same layout in a folder (the embedded default, as `ARTIFACT_ROOT` always
was): its trees need no copy, `local_root()` hands their folder to whoever runs a node.
S3Store (s3store.py) talks to a bucket through boto3 (multipart transfers in parallel, retries,
presigned URLs).
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

MANIFESTS = "_manifests"
PACKS = "_packs"  # a tree's small files, kept together (packs.py)
MANIFEST_VERSION = 1
CHUNK = 8 * 1024 * 1024  # multipart part size, and the read size of streamed downloads
TRANSFER_THREADS = 8


class StoreError(Exception):
    """The store cannot be used: unreachable, a missing bucket, refused credentials, a full disk.
    The message names the setting and the bucket, and what to do."""


class NotInStore(StoreError):
    """No object (or no complete tree) under this key."""


class DiskFull(StoreError):
    """This machine's disk had no room for what was being downloaded."""


@dataclass
class Manifest:
    """A complete tree: its files (relative path -> size, SHA-256) and the trees it refers to."""

    key: str
    files: dict[str, dict] = field(default_factory=dict)
    refs: list[str] = field(default_factory=list)

    @property
    def size(self) -> int:
        return sum(int(f["size"]) for f in self.files.values())

    def to_json(self) -> bytes:
        return json.dumps({"version": MANIFEST_VERSION, "key": self.key, "files": self.files, "refs": self.refs},
                          sort_keys=True).encode()

    @classmethod
    def from_json(cls, raw: bytes) -> Manifest:
        doc = json.loads(raw)
        return cls(doc["key"], dict(doc.get("files") or {}), list(doc.get("refs") or []))


def check_key(key: str) -> str:
    """A key as the store keeps it: relative, `/`-separated, no `.`/`..` parts, no empty parts."""
    if not isinstance(key, str) or not key or key.startswith("/") or "\0" in key or "\\" in key:
        raise ValueError(f"{key!r:.120} is not an artifact key")
    parts = key.split("/")
    if any(p in ("", ".", "..") for p in parts) or parts[0] in (MANIFESTS, PACKS):
        raise ValueError(f"{key!r:.120} is not an artifact key")
    return key


def check_object_key(key: str) -> str:
    """Any key `walk()` gives: an artifact key, a tree's manifest `_manifests/<key>.json`, or one
    of a tree's packs `_packs/<key>/<name>` (packs.py)."""
    if isinstance(key, str) and key.startswith(f"{MANIFESTS}/") and key.endswith(".json"):
        check_key(key[len(MANIFESTS) + 1:-len(".json")])
        return key
    if isinstance(key, str) and key.startswith(f"{PACKS}/") and key.count("/") >= 2:
        check_key(key[len(PACKS) + 1:])
        return key
    return check_key(key)


def file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            h.update(chunk)
    return h.hexdigest()


def scan_tree(folder: Path, digests: bool = True) -> dict[str, dict]:
    """Every regular file below `folder` (symbolic links followed only when they stay inside it):
    relative POSIX path -> {size, sha256} (sha256 empty unless `digests`)."""
    folder = Path(folder)
    root = folder.resolve()
    files = {}
    for path in sorted(folder.rglob("*")):
        if not path.is_file():
            continue
        if path.is_symlink() and not path.resolve().is_relative_to(root):
            continue  # a link to another tree's file (an input's image): that tree is a ref, not a copy
        files[path.relative_to(folder).as_posix()] = {"size": path.stat().st_size,
                                                       "sha256": file_digest(path) if digests else ""}
    return files


class Store:
    """What every store offers. Keys: see the module's docstring."""

    url: str

    def describe(self) -> str:
        return self.url

    def check(self) -> None:
        """Raise StoreError (naming the setting, the bucket and the cause) unless the store can be
        read and written."""
        raise NotImplementedError

    def local_root(self) -> Path | None:
        """The folder that holds every key as a file, when there is one (LocalStore): nothing need
        be fetched or uploaded. None for a remote store."""
        return None

    # ---- trees
    def upload_tree(self, key: str, folder: Path, refs: list[str] | tuple = ()) -> Manifest:
        raise NotImplementedError

    def manifest(self, key: str) -> Manifest | None:
        """The manifest of the complete tree at `key`; None when there is none (never uploaded, or
        an upload that did not finish)."""
        raw = self._get_optional(f"{MANIFESTS}/{check_key(key)}.json")
        return Manifest.from_json(raw) if raw is not None else None

    def download_tree(self, manifest: Manifest, dest: Path) -> None:
        raise NotImplementedError

    # ---- single objects
    def put_file(self, key: str, path: Path) -> None:
        raise NotImplementedError

    def put_bytes(self, key: str, data: bytes) -> None:
        raise NotImplementedError

    def open(self, key: str) -> IO[bytes]:
        """A binary stream of the object (read a piece at a time); NotInStore when there is none."""
        raise NotImplementedError

    def size(self, key: str) -> int | None:
        raise NotImplementedError

    def read_range(self, key: str, offset: int, length: int) -> bytes:
        """At most `length` bytes from `offset` (b"" past the end); NotInStore when there is none."""
        raise NotImplementedError

    def read_bytes(self, key: str, limit: int) -> bytes:
        """The whole object, refused (StoreError) when larger than `limit`."""
        size = self.size(key)
        if size is None:
            raise NotInStore(f"{self.describe()}: no object {key!r}")
        if size > limit:
            raise StoreError(f"{key!r} is {size} bytes, more than the {limit} read here")
        return self.read_range(key, 0, size)

    def list(self, prefix: str) -> list[tuple[str, int]]:
        """(path relative to `prefix`, size) of every object below the folder `prefix`, sorted."""
        raise NotImplementedError

    def delete_prefix(self, prefix: str) -> int:
        """Remove every object below the folder `prefix` and the manifests of trees below it
        (manifest first: a reader never sees a tree with files missing); the number removed."""
        raise NotImplementedError

    def download_url(self, key: str, filename: str, seconds: int = 300) -> str | None:
        """A URL the browser can fetch the object from directly (S3: presigned), or None."""
        return None

    # ---- every object as it is kept (manage.py copy_store): keys as check_object_key takes them
    def walk(self) -> Iterator[tuple[str, int]]:
        """(key, size) of every object of the store, the trees' manifests included, sorted."""
        raise NotImplementedError

    def get_object(self, key: str, path: Path) -> None:
        """The object (a manifest too) written to the file `path`; NotInStore when there is none."""
        raise NotImplementedError

    def put_object(self, key: str, path: Path) -> None:
        """The file `path` as the object `key` (a manifest too: put it after its tree's files)."""
        raise NotImplementedError

    def sha256(self, key: str) -> str:
        """The SHA-256 of the object's bytes as they are in the store (read through)."""
        raise NotImplementedError

    def _get_optional(self, key: str) -> bytes | None:
        try:
            return self.read_range(key, 0, 1 << 40)
        except NotInStore:
            return None


# ---------------------------------------------------------------- a local folder


class LocalStore(Store):
    """The store as a folder: `<root>/<key>`, manifests in `<root>/_manifests/`. Writes go to a
    temporary name first and are renamed into place."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.url = str(self.root)

    def check(self) -> None:
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=self.root, prefix=".check-"):
                pass
        except OSError as e:
            raise StoreError(f"ARTIFACT_STORE={self.url}: cannot write in this folder ({e.strerror or e})") from None

    def local_root(self) -> Path:
        return self.root

    def path(self, key: str) -> Path:
        return self.root.joinpath(*check_key(key).split("/"))

    def upload_tree(self, key, folder, refs=()):
        target = self.path(key)
        folder = Path(folder)
        if folder.resolve() != target.resolve():
            tmp = target.with_name(f".{target.name}.incoming-{os.getpid()}-{threading.get_ident()}")
            shutil.rmtree(tmp, ignore_errors=True)
            shutil.copytree(folder, tmp, symlinks=True)
            shutil.rmtree(target, ignore_errors=True)
            tmp.rename(target)
        manifest = Manifest(key, scan_tree(target), sorted(set(refs)))
        self.put_bytes(f"{MANIFESTS}/{key}.json", manifest.to_json(), checked=False)
        return manifest

    def manifest(self, key):
        path = self.root / MANIFESTS / f"{check_key(key)}.json"
        if path.is_file():
            return Manifest.from_json(path.read_bytes())
        # a folder written before manifests existed (or by this store itself, in place): complete
        # if it exists at all, since a node's outputs only ever appear by a rename
        folder = self.path(key)
        return Manifest(key, scan_tree(folder, digests=False)) if folder.is_dir() else None

    def download_tree(self, manifest, dest):
        dest = Path(dest)
        source = self.path(manifest.key)
        for rel in manifest.files:
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source / rel, target)

    def put_file(self, key, path):
        self.put_object(check_key(key), path)

    def put_object(self, key, path):
        target = self.root.joinpath(*check_object_key(key).split("/"))
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.incoming-{os.getpid()}-{threading.get_ident()}")
        shutil.copyfile(path, tmp)
        tmp.rename(target)

    def get_object(self, key, path):
        source = self.root.joinpath(*check_object_key(key).split("/"))
        if not source.is_file():
            raise NotInStore(f"{self.url}: no object {key[:200]!r}")
        shutil.copyfile(source, path)

    def sha256(self, key):
        source = self.root.joinpath(*check_object_key(key).split("/"))
        if not source.is_file():
            raise NotInStore(f"{self.url}: no object {key[:200]!r}")
        return file_digest(source)

    def walk(self):
        root = self.root.resolve()
        found = []
        for path in self.root.rglob("*"):
            rel = path.relative_to(self.root)
            if any(p.startswith(".") and (".incoming-" in p or p.startswith(".check-")) for p in rel.parts):
                continue  # a write in progress (or a crashed one), never an object
            if path.is_file() and not (path.is_symlink() and not path.resolve().is_relative_to(root)):
                found.append((rel.as_posix(), path.stat().st_size))
        return iter(sorted(found))

    def put_bytes(self, key, data, checked=True):
        target = self.path(key) if checked else self.root.joinpath(*key.split("/"))
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.incoming-{os.getpid()}-{threading.get_ident()}")
        tmp.write_bytes(data)
        tmp.rename(target)

    def open(self, key):
        try:
            return self.path(key).open("rb")
        except OSError:  # none, a folder, or a name longer than the file system takes
            raise NotInStore(f"{self.url}: no object {key[:200]!r}") from None

    def size(self, key):
        try:
            stat = self.path(key).stat()
        except OSError:
            return None
        return stat.st_size if stat.st_mode & 0o100000 else None

    def read_range(self, key, offset, length):
        with self.open(key) as f:
            f.seek(offset)
            return f.read(length)

    def _get_optional(self, key):
        path = self.root.joinpath(*key.split("/"))
        return path.read_bytes() if path.is_file() else None

    def list(self, prefix):
        folder = self.path(prefix)
        if not folder.is_dir():
            return []
        return [(f.relative_to(folder).as_posix(), f.stat().st_size) for f in sorted(folder.rglob("*")) if f.is_file()]

    def delete_prefix(self, prefix):
        manifests = self.root / MANIFESTS / check_key(prefix)
        shutil.rmtree(manifests, ignore_errors=True)
        Path(f"{manifests}.json").unlink(missing_ok=True)
        folder = self.path(prefix)
        count = sum(1 for f in folder.rglob("*") if f.is_file()) if folder.is_dir() else 0
        shutil.rmtree(folder, ignore_errors=True)
        return count
