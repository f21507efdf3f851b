"""Copy every object of one artifact store into another: a deployment's folder into a bucket when
it moves to ARTIFACT_STORE=s3://..., a bucket back into a folder, or one bucket into another.

    manage.py copy_store /srv/designer/artifacts s3://designer/artifacts
    manage.py copy_store s3://designer/artifacts /backup/artifacts --endpoint-url http://seaweed:8333

Every object of the source (the trees' manifests too) is copied unless the destination has it
already with the same size and SHA-256, so an interrupted copy is resumed by running it again,
and a run that finds everything there copies nothing and says so. Each copied object is read
back at the destination and its SHA-256 compared. The trees' files go first and their manifests
last (designer/engine/store.py): a tree whose copy failed or stopped half way stays invisible
there. A folder written before manifests existed holds node outputs (`<run>/<node>/<port>` with
a `_meta.yaml`) and dataset uploads (`datasets/<owner>/<upload>`) with no manifest: one is
written for each at the destination, so that workers there can fetch them. A bucket keeps a
tree's small files in packs (designer/engine/packs.py): copied into a folder, the packs come along
and each packed file is written out beside them, since a folder's readers read files. Nothing at the
destination is deleted. Failures are listed with their keys; the command then exits non-zero.
"""
from __future__ import annotations

import re
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from designer.engine import packs, paths
from designer.engine.s3store import S3Store
from designer.engine.store import (
    MANIFESTS,
    PACKS,
    TRANSFER_THREADS,
    LocalStore,
    Manifest,
    Store,
    StoreError,
    file_digest,
)
from designer.engine.stores import open_store
from designer.pipelines.runs.artifacts import REF_SCAN_BYTES, REF_SUFFIXES
from sdk.formats.meta import META_FILE

NOT_RUNS = {paths.DATASETS_DIR, paths.MODELS_DIR, paths.COMPONENTS_DIR, MANIFESTS, PACKS}


@dataclass
class Tally:
    copied: int = 0
    copied_bytes: int = 0
    skipped: int = 0
    skipped_bytes: int = 0
    manifests_written: int = 0
    unpacked: int = 0  # files of packs written out in a destination folder
    failures: dict[str, str] = field(default_factory=dict)
    digests: dict[str, str] = field(default_factory=dict)  # key -> SHA-256 of what the destination holds
    lock: threading.Lock = field(default_factory=threading.Lock)


class Command(BaseCommand):
    help = ("Copy every object of an artifact store into another (folders and s3://bucket/prefix), skipping those "
            "already there with the same size and SHA-256: copy_store SOURCE DEST.")

    def add_arguments(self, parser):
        parser.add_argument("source", help="an absolute folder, or s3://bucket/prefix")
        parser.add_argument("dest", help="an absolute folder, or s3://bucket/prefix")
        parser.add_argument("--endpoint-url", default=None,
                            help="the S3-compatible server of the buckets (default: ARTIFACT_STORE_ENDPOINT_URL)")
        parser.add_argument("--source-endpoint-url", default=None,
                            help="the source bucket's server, when it is not the destination's")
        parser.add_argument("--threads", type=int, default=TRANSFER_THREADS, help="objects copied side by side")

    def handle(self, *args, **opts):
        endpoint = opts["endpoint_url"] or settings.ARTIFACT_STORE_ENDPOINT_URL
        source = _opened("SOURCE", opts["source"], opts["source_endpoint_url"] or endpoint)
        dest = _opened("DEST", opts["dest"], endpoint)
        _refuse_overlap(source, dest)
        try:
            if isinstance(source, LocalStore) and not source.root.is_dir():
                raise StoreError(f"SOURCE {source.url}: no such folder")
            dest.check()
            tally = copy_store(source, dest, max(1, opts["threads"]), self._copied if opts["verbosity"] > 1 else None)
        except StoreError as e:
            raise CommandError(str(e)) from None
        self._report(tally)

    def _copied(self, key: str, size: int) -> None:
        self.stdout.write(f"copied {key} ({size} bytes)")

    def _report(self, tally: Tally) -> None:
        for key, why in sorted(tally.failures.items()):
            self.stderr.write(f"FAILED {key}: {why}")
        if tally.copied == 0 and not tally.failures:
            self.stdout.write(f"nothing to copy: all {tally.skipped} object(s) ({tally.skipped_bytes} bytes) are at "
                              "the destination already, with the same size and SHA-256")
            return
        written = (f", {tally.manifests_written} of them manifests written for trees kept before manifests existed"
                   if tally.manifests_written else "")
        self.stdout.write(f"copied {tally.copied} object(s) ({tally.copied_bytes} bytes){written}; skipped "
                          f"{tally.skipped} already there ({tally.skipped_bytes} bytes); {len(tally.failures)} failed")
        if tally.unpacked:
            self.stdout.write(f"wrote {tally.unpacked} file(s) of the bucket's packs out as files of the folder")
        if tally.failures:
            raise CommandError(f"{len(tally.failures)} object(s) not copied (listed above): run the same command "
                               "again to retry them (what was copied is skipped)")


def _opened(which: str, setting: str, endpoint: str | None) -> Store:
    try:
        return open_store(setting, endpoint)
    except StoreError as e:
        raise CommandError(f"{which}: {e}") from None


def _refuse_overlap(source: Store, dest: Store) -> None:
    """The same store, or one inside the other: the copy would copy its own copies."""
    if isinstance(source, LocalStore) and isinstance(dest, LocalStore):
        a, b = source.root.resolve(), dest.root.resolve()
        if a == b or a.is_relative_to(b) or b.is_relative_to(a):
            raise CommandError(f"{source.url} and {dest.url}: one folder is (inside) the other")
    if isinstance(source, S3Store) and isinstance(dest, S3Store) and \
            (source.bucket, source.endpoint_url) == (dest.bucket, dest.endpoint_url):
        a, b = f"{source.prefix}/".lstrip("/"), f"{dest.prefix}/".lstrip("/")
        if a.startswith(b) or b.startswith(a):
            raise CommandError(f"{source.url} and {dest.url}: one prefix is (inside) the other in the same bucket")


def copy_store(source: Store, dest: Store, threads: int = TRANSFER_THREADS, said=None) -> Tally:
    """Copy every object of `source` missing or different at `dest`: the trees' files, then their
    manifests (those of trees with no failed file), then manifests for a folder's older trees."""
    tally = Tally()
    objects = list(source.walk())
    present = dict(dest.walk())
    files = [(k, n) for k, n in objects if not k.startswith(f"{MANIFESTS}/")]
    manifests = [(k, n) for k, n in objects if k.startswith(f"{MANIFESTS}/")]
    with tempfile.TemporaryDirectory(prefix="copy-store-") as tmp, ThreadPoolExecutor(threads) as pool:
        def one(item):
            _copy_one(source, dest, item[0], item[1], present, Path(tmp), tally, said)
        list(pool.map(one, files))
        complete = []
        for key, size in manifests:
            tree = key[len(MANIFESTS) + 1:-len(".json")]
            broken = _failed_below(tally, tree)
            if broken:
                tally.failures[key] = f"not copied: a file of its tree failed ({broken})"
            else:
                complete.append((key, size))
        list(pool.map(one, complete))
        if isinstance(dest, LocalStore):
            _unpack(dest, [k for k, _ in complete if k not in tally.failures], tally)
        if isinstance(source, LocalStore):
            _write_older_manifests(source, dest, files, {k for k, _ in manifests}, present, Path(tmp), tally)
    return tally


def _unpack(dest: LocalStore, manifests: list[str], tally: Tally) -> None:
    """A folder's readers read a tree's files, not a bucket's packs: each packed file written out
    of its pack (copied with the tree) beside it, where it is not there already."""
    for key in manifests:
        tree = key[len(MANIFESTS) + 1:-len(".json")]
        try:
            manifest = dest.manifest(tree)
            if manifest is not None:
                tally.unpacked += packs.unpack_in_folder(dest.root, tree, manifest.files)
        except (StoreError, OSError, ValueError) as e:
            tally.failures[key] = f"its packed files not written out: {e}"[:500]


def _failed_below(tally: Tally, tree: str) -> str | None:
    return next((k for k in tally.failures if k.startswith(f"{tree}/")), None)


def _copy_one(source: Store, dest: Store, key: str, size: int, present: dict, tmp: Path, tally: Tally, said) -> None:
    """One object: skipped when the destination has the same bytes, else copied and read back."""
    try:
        if present.get(key) == size:
            digest = source.sha256(key)
            if dest.sha256(key) == digest:
                with tally.lock:
                    tally.skipped += 1
                    tally.skipped_bytes += size
                    tally.digests[key] = digest
                return
        local = source.local_root()
        path = local.joinpath(*key.split("/")) if local is not None else tmp / f"{threading.get_ident()}"
        if local is None:
            source.get_object(key, path)
        digest, size = file_digest(path), path.stat().st_size
        dest.put_object(key, path)
        if dest.sha256(key) != digest:
            raise StoreError("its SHA-256 at the destination differs from the source's after the copy")
    except (StoreError, OSError, ValueError) as e:
        with tally.lock:
            tally.failures[key] = str(e)[:500] or type(e).__name__
        return
    with tally.lock:
        tally.copied += 1
        tally.copied_bytes += size
        tally.digests[key] = digest
    if said:
        said(key, size)


def older_trees(files: list[tuple[str, int]], manifests: set[str]) -> dict[str, list[tuple[str, int]]]:
    """The trees of a folder written before manifests existed (none of them in `manifests`):
    {tree key: its files}. A node output is `<run>/<node>/<port>` with a `_meta.yaml`; a dataset
    upload is `datasets/<owner>/<upload>` (a tree of one file, as a node reading it fetches it)."""
    roots = {k.rsplit("/", 1)[0] for k, _ in files
             if k.count("/") == 3 and k.endswith(f"/{META_FILE}") and k.split("/")[0] not in NOT_RUNS}
    roots |= {"/".join(k.split("/")[:3]) for k, _ in files
              if k.startswith(f"{paths.DATASETS_DIR}/") and k.count("/") >= 3}
    trees: dict[str, list[tuple[str, int]]] = {t: [] for t in roots if f"{MANIFESTS}/{t}.json" not in manifests}
    for key, size in files:
        tree = "/".join(key.split("/")[:3])
        if tree in trees:
            trees[tree].append((key, size))
    return trees


def _write_older_manifests(source: LocalStore, dest: Store, files, manifests: set[str], present: dict, tmp: Path,
                           tally: Tally) -> None:
    """A manifest at the destination for every tree of the folder that has none, listing the
    files as copied (their SHA-256) and the trees its text files name by an absolute path."""
    trees = older_trees(files, manifests)
    for tree, members in sorted(trees.items()):
        key = f"{MANIFESTS}/{tree}.json"
        broken = _failed_below(tally, tree)
        if broken:
            tally.failures[key] = f"not written: a file of its tree failed ({broken})"
            continue
        entries = {k[len(tree) + 1:]: {"size": n, "sha256": tally.digests[k]} for k, n in members}
        raw = Manifest(tree, entries, _refs(source, tree, set(trees) - {tree})).to_json()
        path = tmp / "manifest.json"
        path.write_bytes(raw)
        before = tally.copied
        _copy_written(dest, key, path, present, tally)
        tally.manifests_written += tally.copied - before


def _copy_written(dest: Store, key: str, path: Path, present: dict, tally: Tally) -> None:
    """A file made here (a manifest) put at `key` unless the destination has the same bytes."""
    size, digest = path.stat().st_size, file_digest(path)
    try:
        if present.get(key) == size and dest.sha256(key) == digest:
            tally.skipped += 1
            tally.skipped_bytes += size
            return
        dest.put_object(key, path)
        if dest.sha256(key) != digest:
            raise StoreError("its SHA-256 at the destination differs from what was written")
    except (StoreError, OSError, ValueError) as e:
        tally.failures[key] = str(e)[:500] or type(e).__name__
        return
    tally.copied += 1
    tally.copied_bytes += size


def _refs(source: LocalStore, tree: str, others: set[str]) -> list[str]:
    """The trees among `others` that a text file of `tree` names by an absolute path in the folder."""
    roots = sorted({str(source.root), str(source.root.resolve())}, key=len, reverse=True)
    named = re.compile("(?:" + "|".join(re.escape(r) for r in roots) + r")/([^\s\"',;\]}]+)")
    found: set[str] = set()
    for f in source.path(tree).rglob("*"):
        if f.suffix.lower() not in REF_SUFFIXES or not f.is_file() or f.stat().st_size > REF_SCAN_BYTES:
            continue
        for m in named.finditer(f.read_text(encoding="utf-8", errors="replace")):
            tree_named = "/".join(m.group(1).split("/")[:3])
            if tree_named in others:
                found.add(tree_named)
    return sorted(found)
