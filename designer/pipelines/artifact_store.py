"""This deployment's artifact store (settings.ARTIFACT_STORE, designer/engine/store.py) and, on a
worker with a remote store, its cache (settings.WORKER_CACHE_DIR, designer/engine/artifact_cache.py).

One store object per process and setting (boto3's client is thread-safe and keeps its connections).
"""
from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import yaml
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.files import File
from django.core.files.storage import FileSystemStorage, Storage

from designer.engine import paths
from designer.engine.artifact_cache import ArtifactCache
from designer.engine.store import NotInStore, Store, StoreError, check_key
from designer.engine.stores import open_store
from sdk.layout import META_FILE

META_MAX_BYTES = 1024 * 1024
_lock = threading.RLock()  # (cache() opens the store while it holds it)
_opened: dict[tuple, Store] = {}
_caches: dict[tuple, ArtifactCache] = {}


def get() -> Store:
    """The store that ARTIFACT_STORE names: a bucket, or the folder ARTIFACT_ROOT (settings.py makes
    the two one folder; read at each call, so that a test or a command may move it)."""
    setting = settings.ARTIFACT_STORE if str(settings.ARTIFACT_STORE).startswith("s3://") else str(settings.ARTIFACT_ROOT)
    key = (setting, settings.ARTIFACT_STORE_ENDPOINT_URL)
    with _lock:
        if key not in _opened:
            _opened[key] = open_store(*key)
        return _opened[key]


def is_remote() -> bool:
    """Whether artifacts live somewhere no path reaches (a bucket): nodes then fetch and upload."""
    return get().local_root() is None


def output_key(stored: str) -> str:
    """The store key of a NodeRun's output as stored: a key, or an absolute path of an older row
    (under ARTIFACT_ROOT); paths.OutsideFolder for anything else."""
    if not isinstance(stored, str) or not stored:
        raise paths.OutsideFolder(f"{stored!r:.80} names no output")
    if stored.startswith("/"):
        root = Path(settings.ARTIFACT_ROOT).resolve()
        return paths.inside(root, stored).relative_to(root).as_posix()
    try:
        return check_key(stored)
    except ValueError as e:
        raise paths.OutsideFolder(str(e)) from None


@contextlib.contextmanager
def materialized(key: str) -> Iterator[Path]:
    """The tree `key` as a folder here while the block runs: the store's own folder, or (a bucket)
    a temporary copy downloaded whole, gone after the block. NotInStore when it is not complete."""
    store = get()
    root = store.local_root()
    if root is not None:
        folder = paths.inside(root, key)
        if not folder.is_dir():
            raise NotInStore(f"{store.describe()}: no folder {key!r}")
        yield folder
        return
    manifest = store.manifest(key)
    if manifest is None:
        raise NotInStore(f"{store.describe()}: the artifact {key!r} is not in the store (never completed, or deleted)")
    with tempfile.TemporaryDirectory(prefix="designer-tree-") as tmp:
        store.download_tree(manifest, Path(tmp))
        yield Path(tmp)


def read_tree_meta(key: str) -> dict:
    """The `_meta.yaml` of a tree ({} when there is none, or it cannot be read)."""
    try:
        raw = get().read_bytes(f"{check_key(key)}/{META_FILE}", META_MAX_BYTES)
        doc = yaml.safe_load(raw.decode("utf-8"))
    except (StoreError, ValueError, UnicodeDecodeError, yaml.YAMLError):
        return {}
    return doc if isinstance(doc, dict) else {}


@contextlib.contextmanager
def held(keys: list[str]) -> Iterator[dict[str, Path]]:
    """{key: folder here} of every tree of `keys` (and of the trees they refer to) while the block
    runs: the store's own folders, or (a bucket) this machine's cache, fetched unless there and
    never evicted meanwhile."""
    root = get().local_root()
    if root is not None:
        yield {key: paths.inside(root, key) for key in keys}
        return
    with cache().hold(keys) as found:
        yield found


def trees_root() -> Path:
    """Where a node finds the store's trees by path: the store's folder, or (a bucket) the cache's,
    the same path on every machine (an image index, a dataset's or a model's path point there)."""
    root = get().local_root()
    return root if root is not None else cache_trees()


def cache_trees() -> Path:
    """Where a worker's cache keeps the store's trees: the same path on every worker."""
    return Path(settings.WORKER_CACHE_DIR) / "trees"


def cache() -> ArtifactCache:
    """This worker's cache of the store's trees."""
    key = (get().url, str(settings.WORKER_CACHE_DIR), settings.WORKER_CACHE_MB)
    with _lock:
        if key not in _caches:
            _caches[key] = ArtifactCache(get(), settings.WORKER_CACHE_DIR, int(settings.WORKER_CACHE_MB * 1024 * 1024))
        return _caches[key]


def check_at_start() -> None:
    """Stop a process's start-up with a sentence naming the setting and the bucket when the store
    cannot be read and written (unreachable, no such bucket, refused credentials)."""
    try:
        get().check()
    except StoreError as e:
        raise ImproperlyConfigured(f"The artifact store cannot be used: {e}") from None


class StoreStorage(Storage):
    """Django's file storage on the artifact store, for file fields (uploaded datasets), looked up
    at each use (settings may change after the model is loaded: tests, a moved store). A folder:
    Django's FileSystemStorage there. A bucket: a file `a/b/<folder>/<name>` is kept as the tree
    `a/b/<folder>` of one file, complete or not there at all, which a worker fetches into its
    cache like any node's output."""

    def _local(self) -> FileSystemStorage | None:
        root = get().local_root()
        return FileSystemStorage(location=root) if root is not None else None

    def _tree(self, name: str) -> str:
        folder, _, _ = name.rpartition("/")
        if not folder:
            raise ValueError(f"{name!r}: a stored file lies in a folder of its own")
        return folder

    def _save(self, name, content):
        local = self._local()
        if local is not None:
            return local._save(name, content)
        folder, _, filename = name.rpartition("/")
        self._tree(name)
        with tempfile.TemporaryDirectory(prefix="designer-upload-") as tmp:
            target = Path(tmp, filename)
            source = getattr(content, "temporary_file_path", None)
            if source is not None:
                try:
                    os.link(source(), target)  # (Django's own temporary file: no copy)
                except OSError:
                    shutil.copyfile(source(), target)
            else:
                content.seek(0)
                with target.open("wb") as out:
                    shutil.copyfileobj(content, out, 1024 * 1024)
            get().upload_tree(folder, Path(tmp))
        return name

    def _open(self, name, mode="rb"):
        local = self._local()
        if local is not None:
            return local._open(name, mode)
        if "w" in mode or "a" in mode:
            raise ValueError("the artifact store's files are written whole, never opened for writing")
        return File(get().open(name), name)

    def exists(self, name):
        local = self._local()
        return local.exists(name) if local is not None else get().size(name) is not None

    def delete(self, name):
        local = self._local()
        if local is not None:
            return local.delete(name)
        get().delete_prefix(self._tree(name))

    def size(self, name):
        local = self._local()
        return local.size(name) if local is not None else get().size(name) or 0

    def path(self, name):
        local = self._local()
        if local is None:
            raise NotImplementedError("a file of the bucket has no path here")
        return local.path(name)

    def url(self, name):
        raise NotImplementedError("the web app serves stored files itself (downloads.py)")

    def listdir(self, path):
        local = self._local()
        if local is None:
            raise NotImplementedError("the artifact store is not listed through Django")
        return local.listdir(path)
