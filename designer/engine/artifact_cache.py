"""A worker's own cache of the store's trees: a node's inputs are fetched here before it starts,
and its outputs, written here, stay here once uploaded (the next node or sweep trial on this
worker reads them without a download).

    <root>/trees/<key>/...          a tree as it is in the store (the same path on every worker:
                                    an ImageDirectory's index may hold absolute paths into it)
    <root>/.state/index.json        entries {key: {bytes, used}} and counters (hits, misses, bytes fetched)
    <root>/.state/holds/<pid>-<n>   the keys a running node reads: never evicted while it is there
    <root>/.state/incoming/         downloads in progress, renamed into trees/ once complete

Bounded by `max_bytes`: before a fetch, the least recently used entries that no running node
holds are removed until the new tree fits; when even that is not enough the fetch is refused
with the setting's name. Every process of a worker (its pool, several nodes at once) shares the
cache through a lock file (fcntl); a hold whose process is gone counts for nothing.
"""
from __future__ import annotations

import errno
import fcntl
import hashlib
import itertools
import json
import os
import shutil
import time
import uuid
from contextlib import contextmanager
from pathlib import Path

from designer.engine.store import DiskFull, Manifest, NotInStore, Store, StoreError, check_key

_counter = itertools.count()


class CacheFull(StoreError):
    """The cache cannot hold what a node needs, even with everything evictable removed."""


class ArtifactCache:
    def __init__(self, store: Store, root: Path, max_bytes: int, setting: str = "WORKER_CACHE_DIR"):
        self.store = store
        self.root = Path(root)
        self.trees = self.root / "trees"
        self.state = self.root / ".state"
        self.max_bytes = int(max_bytes)
        self.setting = setting
        self._folders()

    def _folders(self) -> None:
        """Its folders (again, when a cleaner or an operator removed them: a cold cache)."""
        for d in (self.trees, self.state / "holds", self.state / "incoming", self.state / "keys"):
            d.mkdir(parents=True, exist_ok=True)

    def path_of(self, key: str) -> Path:
        return self.trees.joinpath(*check_key(key).split("/"))

    # ---- the shared state, under one lock
    @contextmanager
    def _locked(self, name: str = "lock"):
        with open(self.state / name, "a+") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    def _read_index(self) -> dict:
        try:
            doc = json.loads((self.state / "index.json").read_text())
            return doc if isinstance(doc, dict) and isinstance(doc.get("entries"), dict) else _empty()
        except (OSError, ValueError):
            return _empty()

    def _write_index(self, doc: dict) -> None:
        tmp = self.state / f"index.json.{os.getpid()}"
        tmp.write_text(json.dumps(doc))
        tmp.rename(self.state / "index.json")

    def _clear_incoming(self) -> None:
        """The partial downloads of processes that died mid-fetch (a SIGKILL leaves them): gone."""
        for d in (self.state / "incoming").iterdir():
            pid = d.name.split("-")[0]
            if pid.isdigit() and not _alive(int(pid)):
                shutil.rmtree(d, ignore_errors=True)

    def _held_keys(self) -> set[str]:
        held: set[str] = set()
        for f in (self.state / "holds").iterdir():
            pid = f.name.split("-")[0]
            if pid.isdigit() and not _alive(int(pid)):
                f.unlink(missing_ok=True)
                continue
            try:
                held.update(json.loads(f.read_text()))
            except (OSError, ValueError):
                continue
        return held

    # ---- what a node does
    @contextmanager
    def hold(self, keys):
        """Fetch every tree of `keys` (and the trees they refer to) unless cached; yield
        {key: local folder} of each, the trees referred to included (an output written from them
        may name their files: its manifest records them); none is evicted until the block ends."""
        self._folders()
        holder = self.state / "holds" / f"{os.getpid()}-{next(_counter)}-{uuid.uuid4().hex[:6]}"
        wanted: list[str] = []
        holder.write_text(json.dumps(wanted))
        try:
            paths = {}
            todo = list(dict.fromkeys(keys))
            while todo:
                key = todo.pop(0)
                if key in wanted:
                    continue
                wanted.append(key)
                holder.write_text(json.dumps(wanted))  # held before it is fetched: never evicted under us
                refs = self._fetch(key)
                paths[key] = self.path_of(key)
                todo.extend(r for r in refs if r not in wanted)
            yield {k: paths[k] for k in wanted}
        finally:
            holder.unlink(missing_ok=True)

    def adopt(self, key: str, manifest: Manifest) -> None:
        """A tree written in place here (a node's output) and now in the store: an entry of the cache."""
        with self._locked():
            doc = self._read_index()
            doc["entries"][key] = {"bytes": manifest.size, "used": time.time(), "refs": manifest.refs}
            self._write_index(doc)

    def stats(self, recent: int = 0) -> dict:
        """What it holds and how it served; `recent`: also the keys of that many most recently
        used trees with their sizes (`keys`: what a dispatcher places nodes by)."""
        with self._locked():
            doc = self._read_index()
        entries = doc["entries"]
        used = sum(int(e.get("bytes", 0)) for e in entries.values())
        found = {"entries": len(entries), "bytes": used, "max_bytes": self.max_bytes,
                 "hits": doc["hits"], "misses": doc["misses"], "bytes_fetched": doc["bytes_fetched"]}
        if recent:
            latest = sorted(entries, key=lambda k: entries[k].get("used", 0), reverse=True)[:recent]
            found["keys"] = {k: int(entries[k].get("bytes", 0)) for k in latest}
        return found

    # ---- fetching
    def _fetch(self, key: str) -> list[str]:
        """Make sure the tree `key` is here; its refs."""
        digest = hashlib.sha256(key.encode()).hexdigest()[:32]
        with self._locked(f"keys/{digest}"):  # one download of a tree at a time, however many ask
            with self._locked():
                doc = self._read_index()
                entry = doc["entries"].get(key)
                if entry is not None and self.path_of(key).is_dir():
                    entry["used"] = time.time()
                    doc["hits"] += 1
                    self._write_index(doc)
                    return list(entry.get("refs") or [])
            manifest = self.store.manifest(key)
            if manifest is None:
                raise NotInStore(f"{self.store.describe()}: the artifact {key!r} is not in the store "
                                 "(never completed, or deleted)")
            self._make_room(manifest.size, key)
            incoming = self.state / "incoming" / f"{os.getpid()}-{uuid.uuid4().hex}"
            self._clear_incoming()
            try:
                self.store.download_tree(manifest, incoming)
                target = self.path_of(key)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.rmtree(target, ignore_errors=True)
                incoming.mkdir(parents=True, exist_ok=True)  # (an empty tree)
                incoming.rename(target)
            except (OSError, DiskFull) as e:
                shutil.rmtree(incoming, ignore_errors=True)
                self._unreserve(key)
                if isinstance(e, DiskFull) or e.errno == errno.ENOSPC:
                    raise CacheFull(f"{self.setting}={self.root}: no space left on this worker's disk for "
                                    f"{key!r} ({manifest.size / 1e6:.1f} MB)") from None
                raise
            except BaseException:
                shutil.rmtree(incoming, ignore_errors=True)
                self._unreserve(key)
                raise
            with self._locked():
                doc = self._read_index()
                doc["entries"][key] = {"bytes": manifest.size, "used": time.time(), "refs": manifest.refs}
                (doc.get("reserved") or {}).pop(key, None)  # (its room is its entry's now)
                doc["misses"] += 1
                doc["bytes_fetched"] += manifest.size
                self._write_index(doc)
            return list(manifest.refs)

    def _make_room(self, needed: int, key: str) -> None:
        """Room for `key` (the least recently used trees that no node holds go first), reserved
        for it until its fetch ends: fetches side by side never take more than the limit together."""
        with self._locked():
            doc = self._read_index()
            entries = doc["entries"]
            pending = {k: r for k, r in (doc.get("reserved") or {}).items()
                       if k != key and isinstance(r, dict) and _alive(int(r.get("pid", 0)))}
            reserved = sum(int(r.get("bytes", 0)) for r in pending.values())
            # (an entry of `key` itself is one whose folder went missing: this fetch replaces it)
            used = sum(int(e.get("bytes", 0)) for k, e in entries.items() if k != key) + reserved
            if used + needed > self.max_bytes:
                held = self._held_keys()
                kept = sum(int(e.get("bytes", 0)) for k, e in entries.items() if k in held and k != key) + reserved
                if kept + needed > self.max_bytes:  # refused before anything goes: evicting would not make room
                    raise CacheFull(
                        f"{self.setting}={self.root}: the worker's cache cannot hold {key!r} ({needed / 1e6:.1f} MB): "
                        f"it holds at most {self.max_bytes / 1e6:.1f} MB (WORKER_CACHE_MB) and running nodes read "
                        f"{kept / 1e6:.1f} MB of it; raise WORKER_CACHE_MB or give this worker fewer slots")
                for old in sorted(entries, key=lambda k: entries[k].get("used", 0)):
                    if used + needed <= self.max_bytes:
                        break
                    if old in held or old == key:
                        continue
                    shutil.rmtree(self.path_of(old), ignore_errors=True)
                    used -= int(entries.pop(old).get("bytes", 0))
            doc["reserved"] = {**pending, key: {"bytes": needed, "pid": os.getpid()}}
            self._write_index(doc)

    def _unreserve(self, key: str) -> None:
        """A fetch that failed gives its room back."""
        with self._locked():
            doc = self._read_index()
            if (doc.get("reserved") or {}).pop(key, None) is not None:
                self._write_index(doc)


def _empty() -> dict:
    return {"entries": {}, "hits": 0, "misses": 0, "bytes_fetched": 0}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
