"""Where a node's files live in this deployment, and how they move: the one place that knows
whether the artifact store is a folder (nothing moves: a node writes in the store itself, as
the embedded app always did) or a bucket (a worker fetches a node's inputs into its cache,
the node writes in the cache, and its outputs and logs are uploaded before it is recorded
completed). designer/engine/paths.py owns every path and checks that it stays inside its folder.

A NodeRun's `outputs` hold store keys (`<run>/<node>/<port>`), never a path on a worker; rows
written before the store existed hold absolute paths under ARTIFACT_ROOT, read as their keys.
"""
from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from django.conf import settings

from designer.engine import paths
from designer.engine.store import NotInStore, StoreError, check_key
from designer.pipelines import artifact_store
from designer.pipelines.artifact_store import output_key
from designer.pipelines.models import NodeRun
from designer.pipelines.runs.rungraph import run_graph
from sdk import layout

log = logging.getLogger(__name__)

RANKS_DIR = ("work", "ranks")  # a distributed node's per-rank state files (supervision.rank)
REF_SUFFIXES = {".csv", ".json", ".yaml", ".yml", ".txt", ".tsv"}
REF_SCAN_BYTES = 64 * 1024 * 1024  # a bigger file is not read for references to other trees
SMALL_FILE = 8 * 1024 * 1024  # a _meta.yaml read whole
FINAL_SYNC_SECONDS = 60  # at most this long a node's end waits for its last logs to reach a store that is away
VIEW_BYTES = 256 * 1024 * 1024  # what the web app copies of an output to preview it (index, tables, meta)


def node_dir(run_id: int, node_id: str) -> Path:
    """The node's folder, checked to be inside its run's folder (paths.OutsideFolder if not): in
    the store itself, or, with a bucket, in this worker's cache."""
    return paths.node_dir(artifact_store.trees_root(), run_id, node_id)


def node_key(run_id: int, node_id: str) -> str:
    paths.node_dir("/", run_id, node_id)  # the same checks as a folder's (paths.OutsideFolder)
    return f"{run_id}/{node_id}"


def logs_dir(run_id: int, node_id: str) -> Path:
    return paths.logs_dir(node_dir(run_id, node_id))


def local_output(stored: str) -> Path | None:
    """An output's folder when the store is a folder (None with a bucket)."""
    root = artifact_store.get().local_root()
    return paths.inside(root, output_key(stored)) if root is not None else None


def exists(stored: str) -> bool:
    """Whether an output is complete in the store (a run reusing it can read it)."""
    try:
        key = output_key(stored)
        root = artifact_store.get().local_root()
        if root is not None:
            return paths.inside(root, key).is_dir()
        return artifact_store.get().manifest(key) is not None
    except (paths.OutsideFolder, StoreError, ValueError):
        return False


# ---------------------------------------------------------------- a worker running a node


fetched = artifact_store.held  # {key: folder here} of a node's inputs while it runs


def keep_outputs(run_id: int, node_id: str, outputs: dict[str, str], held: dict[str, Path]) -> dict[str, str]:
    """The outputs a node wrote (port -> folder) kept in the store; {port: key}. With a bucket each
    is uploaded (its manifest last) with the trees its files point into (an ImageDirectory's
    index names its input's images), and stays in this worker's cache. StoreError when the
    store refuses: the node is then failed, never recorded completed."""
    base = node_key(run_id, node_id)
    keys = {port: f"{base}/{port}" for port in outputs}
    store = artifact_store.get()
    if store.local_root() is not None:
        return keys
    cache = artifact_store.cache()
    candidates = {*held, *keys.values()}
    for port, folder in outputs.items():
        refs = _refs_in(Path(folder), cache.trees, candidates - {keys[port]})
        manifest = store.upload_tree(keys[port], Path(folder), refs)
        cache.adopt(keys[port], manifest)
    return keys


def input_keys(nr, module=None) -> list[str]:
    """The store's trees a node reads: its parents' outputs, a Dataset node's stored upload, a
    Registered model node's version."""
    g = run_graph(nr.run)
    upstream = {x.node_id: x for x in NodeRun.objects.filter(run_id=nr.run_id, node_id__in=g.parents[nr.node_id]).order_by()}
    keys = [output_key(upstream[up].outputs[out]) for up, out in g.inputs[nr.node_id].values()]
    params = g.nodes[nr.node_id].get("parameters", {})
    stored = params.get("stored_file")  # a Dataset node's upload: a tree of one file
    if isinstance(stored, str) and stored and (key := store_key_of_path(stored)) and "/" in key:
        keys.append(key.rsplit("/", 1)[0])
    stored = params.get("stored_folder")  # a Registered model node's version
    if isinstance(stored, str) and stored and (key := store_key_of_path(stored)):
        keys.append(key)
    spec = getattr(module, "component", None)  # an uploaded component's files (its command runs them)
    if spec is not None and (key := store_key_of_path(str(spec.folder))) and key.startswith(f"{paths.COMPONENTS_DIR}/"):
        keys.append("/".join(key.split("/")[:3]))  # components/<owner>/<id>: the upload's tree
    return keys


def _refs_in(folder: Path, trees: Path, candidates: set[str]) -> list[str]:
    """The trees among `candidates` that a text file of `folder` names by an absolute path."""
    found: set[str] = set()
    prefixes = {key: f"{trees}/{key}/" for key in candidates}
    for f in folder.rglob("*"):
        if f.suffix.lower() not in REF_SUFFIXES or not f.is_file() or f.stat().st_size > REF_SCAN_BYTES:
            continue
        text = f.read_text(encoding="utf-8", errors="replace")
        found.update(key for key, prefix in prefixes.items() if key not in found and prefix in text)
    return sorted(found)


def tidy(run_id: int, node_id: str, kept: dict | None = None) -> None:
    """With a bucket, once a node has ended on this worker (its logs in the store): its folder in
    the cache keeps only its outputs (entries of the cache, which evicts them in its turn); its
    logs, work files and device records go, so that a worker's disk holds no more than its cache."""
    if not artifact_store.is_remote():
        return
    try:
        folder = node_dir(run_id, node_id)
    except paths.OutsideFolder:
        return
    keep = {key.rsplit("/", 1)[-1] for key in (kept or {}).values() if isinstance(key, str)}
    for child in folder.iterdir() if folder.is_dir() else ():
        if child.name not in keep:
            shutil.rmtree(child, ignore_errors=True) if child.is_dir() and not child.is_symlink() else child.unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        folder.rmdir()  # (nothing kept: the node failed, or ran here as another machine of a distributed job)


class LogSync(threading.Thread):
    """With a bucket: a running node's logs and device records reach the store every
    LOG_SYNC_SECONDS (the Outputs + logs pane reads them there), and once more when it ends; so
    does a training's checkpoint (`work/checkpoint.pth`, written whole at each epoch's end: another
    machine can go on from it) and a component's (`work/checkpoints/`), which go from the store
    when the module removed them by its end.
    A file is uploaded again only when it has grown or changed."""

    def __init__(self, run_id: int, node_id: str, renamed: dict[str, str] | None = None):
        """`renamed`: files kept in the store under another name (a distributed node's other
        machines keep their launchers' log apart from node 0's)."""
        super().__init__(daemon=True, name=f"logsync-{run_id}-{node_id}")
        self.renamed = renamed or {}
        self.folder = node_dir(run_id, node_id)
        self.key = node_key(run_id, node_id)
        self.stopped = threading.Event()
        self.seen: dict[str, tuple[int, int]] = {}
        self.error: StoreError | None = None

    def __enter__(self) -> LogSync:
        if artifact_store.is_remote():
            self.start()
        return self

    def restore(self) -> list[str]:
        """For a node's next attempt on this machine: what its lost attempts left in the store (its
        logs, which go on growing, and a training's checkpoint, which it goes on from) into the
        node's folder; the paths restored. With a folder store, they are in the folder already."""
        if not artifact_store.is_remote():
            return []
        store, restored = artifact_store.get(), []
        for area in (layout.LOG_DIR, layout.WORK_DIR):
            for rel, _ in store.list(f"{self.key}/{area}"):
                if area == layout.WORK_DIR and not _is_checkpoint(rel):
                    continue
                target = paths.inside(self.folder / area, rel)
                target.parent.mkdir(parents=True, exist_ok=True)
                store.get_object(f"{self.key}/{area}/{rel}", target)
                stat = target.stat()
                self.seen[str(target)] = (stat.st_size, stat.st_mtime_ns)  # in the store already
                restored.append(f"{area}/{rel}")
        return restored

    def __exit__(self, exc_type, *exc) -> None:
        if self.ident is None:
            return  # never started: a store that is a folder
        self.stopped.set()
        self.join()
        # the last lines and the last checkpoint, complete: after a node that ended well, a store
        # that is away a moment (a restart, a busy server) is tried again a while, never for longer
        # than the node itself waits; a failed node (the store away too long, maybe) tries once
        began, pause = time.monotonic(), 0.5
        patience = min(settings.STORE_RETRY_SECONDS, FINAL_SYNC_SECONDS) if exc_type is None else 0
        while True:
            self.sync()
            if self.error is None or time.monotonic() - began >= patience:
                break
            time.sleep(pause)
            pause = min(pause * 2, 5.0)
        if self.error is not None:
            log.warning("%s: the last logs could not be kept in the artifact store: %s", self.key, self.error)
        # checkpoints the module removed (it ended: nothing resumes from them) go from the store too
        work = str(self.folder / layout.WORK_DIR) + os.sep
        kept = [Path(f) for f in self.seen if f.startswith(work)]
        if kept and not any(f.exists() for f in kept):
            try:
                artifact_store.get().delete_prefix(f"{self.key}/{layout.WORK_DIR}")  # (only the checkpoint is kept there)
            except StoreError as e:
                log.warning("%s: an ended training's checkpoint stays in the artifact store: %s", self.key, e)

    def run(self) -> None:
        while not self.stopped.wait(settings.LOG_SYNC_SECONDS):
            try:
                self.sync()
            except Exception:  # never the end of the syncing: the next round, and the last, try again
                log.exception("%s: syncing the logs to the artifact store", self.key)

    def sync(self) -> None:
        store = artifact_store.get()
        self.error = None
        for area, pattern in ((layout.LOG_DIR, "*"), (layout.DEVICES_DIR, "*"), (layout.WORK_DIR, "*")):
            folder = self.folder / area
            if not folder.is_dir():
                continue
            for f in sorted(folder.rglob(pattern)):
                if area == layout.WORK_DIR and not _is_checkpoint(f.relative_to(folder).as_posix()):
                    continue  # (scratch files: the metrics a command writes, the stop request)
                try:
                    stat = f.stat()
                    if not f.is_file() or self.seen.get(str(f)) == (stat.st_size, stat.st_mtime_ns):
                        continue
                    rel = f.relative_to(folder).as_posix()
                    store.put_file(f"{self.key}/{area}/{self.renamed.get(rel, rel)}", f)
                    self.seen[str(f)] = (stat.st_size, stat.st_mtime_ns)
                except StoreError as e:  # the store is away: the next round tries again
                    self.error = e
                except OSError:
                    continue


def _is_checkpoint(rel: str) -> bool:
    """A file of a node's work folder that a next attempt goes on from (sdk/layout.py)."""
    return rel == layout.CHECKPOINT_FILE or rel.startswith(f"{layout.CHECKPOINTS_DIR}/")


# ---------------------------------------------------------------- the web app reading what a run left


def list_output(stored: str) -> list[dict]:
    """{path, size} of every file of an output, from its manifest (a bucket) or its folder."""
    key = output_key(stored)
    manifest = artifact_store.get().manifest(key)
    return [{"path": rel, "size": int(f["size"])} for rel, f in sorted(manifest.files.items())] if manifest else []


def list_area(run_id: int, node_id: str, area: str) -> list[dict]:
    """{path, size} of the files of a node's logs (or devices) folder."""
    return [{"path": rel, "size": size} for rel, size in artifact_store.get().list(f"{node_key(run_id, node_id)}/{area}")]


def file_key(base_key: str, rel: str) -> str:
    """The key of a file of a tree, by a path relative to it as a user sent it (never outside it:
    paths.OutsideFolder for `..`, an absolute path or an empty part)."""
    parts = str(rel).split("/")
    if not rel or any(p in ("", ".", "..") or "\0" in p or "\\" in p for p in parts):
        raise paths.OutsideFolder(f"{str(rel)[:80]!r} leads outside its folder")
    return f"{base_key}/{rel}"


def read_output_meta(stored: str) -> dict:
    """An output's _meta.yaml ({} when it cannot be read)."""
    try:
        return artifact_store.read_tree_meta(output_key(stored))
    except paths.OutsideFolder:
        return {}


@contextlib.contextmanager
def readable_output(stored: str) -> Iterator[Path]:
    """A folder holding an output's files for the web app to read: its own folder (a store that is
    a folder), or a temporary copy of its tables and descriptions (index, CSV, JSON, YAML: never
    images or weights), streamed from the bucket to a temporary folder, gone after the block."""
    folder = local_output(stored)
    if folder is not None:
        yield folder
        return
    store = artifact_store.get()
    key = output_key(stored)
    manifest = store.manifest(key)
    with tempfile.TemporaryDirectory(prefix="designer-view-") as tmp:
        budget = VIEW_BYTES
        for rel, f in sorted(manifest.files.items() if manifest else ()):
            size = int(f["size"])
            if Path(rel).suffix.lower() not in REF_SUFFIXES or size > budget:
                continue
            budget -= size
            target = paths.inside(tmp, rel)
            target.parent.mkdir(parents=True, exist_ok=True)
            with store.open(f"{key}/{rel}") as source, target.open("wb") as out:
                shutil.copyfileobj(source, out, 1024 * 1024)
        yield Path(tmp)


def store_key_of_path(path: str) -> str | None:
    """The key of a file that an index names by an absolute path into the store's folder or a
    worker's cache (the same path on every worker); None for any other path."""
    base = artifact_store.trees_root()
    try:
        resolved = Path(os.path.normpath(path))
        if not resolved.is_absolute() or not resolved.is_relative_to(base):
            return None
        return check_key(resolved.relative_to(base).as_posix())
    except ValueError:
        return None


def devices_of(run_id: int, node_id: str, limit: int = 64) -> list[dict]:
    """The device each process of a training used, by rank (sdk.layout.DEVICES_DIR: small JSON
    files that the training writes); at most `limit`, each read only when it is small."""
    store = artifact_store.get()
    base = f"{node_key(run_id, node_id)}/{layout.DEVICES_DIR}"
    found = []
    try:
        listed = store.list(base)
    except StoreError:
        return []
    for rel, size in [(r, s) for r, s in listed if Path(r).match(layout.DEVICES_GLOB)][:limit]:
        try:
            if size <= 4096:
                info = json.loads(store.read_bytes(f"{base}/{rel}", 4096).decode("utf-8"))
                if isinstance(info, dict):
                    found.append({k: info[k] for k in ("rank", "worker", "device", "gpu", "gpu_memory_gib", "text")
                                  if k in info})
        except (StoreError, ValueError, UnicodeDecodeError):
            continue
    return sorted(found, key=lambda d: d.get("rank") if isinstance(d.get("rank"), int) else 0)


def ranks_dir(node_folder: Path) -> Path:
    """Where the processes of a distributed node record their rank, node and failure."""
    return paths.inside(node_folder, *RANKS_DIR)


def kept_epoch(outputs: dict) -> int | None:
    """The epoch whose model a node's outputs hold, when they say so (Train PyTorch Model keeps the
    epoch of lowest validation loss, `best_epoch`, not its last); None otherwise."""
    for stored in (outputs or {}).values():
        try:
            epoch = read_output_meta(stored).get("best_epoch") if stored else None
        except (OSError, ValueError, AttributeError, paths.OutsideFolder):  # unreadable, or not a mapping
            continue
        if isinstance(epoch, int) and not isinstance(epoch, bool) and epoch > 0:
            return epoch
    return None


__all__ = ["NotInStore", "StoreError"]
