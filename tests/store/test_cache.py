"""A worker's cache of the store's trees (designer/engine/artifact_cache.py) in front of a real S3
server (tests/s3server.py): fetched once, held while a node reads them, evicted least recently
used first, shared by the processes of a worker."""
# ruff: noqa: F811 - the tests take the fixture s3_server imported below
import multiprocessing
import os
import shutil
import subprocess
import time

import pytest

from designer.engine.artifact_cache import ArtifactCache, CacheFull
from designer.engine.s3store import S3Store
from designer.engine.store import NotInStore
from tests.s3server import s3_server  # noqa: F401 - a fixture

pytestmark = pytest.mark.timeout(120)
KB = 1024


@pytest.fixture
def store(s3_server):
    return S3Store(s3_server.store_url(s3_server.new_prefix()), s3_server.url)


def put_tree(store, tmp_path, key, size, refs=(), files=1):
    folder = tmp_path / "src" / key
    folder.mkdir(parents=True)
    for i in range(files):
        (folder / f"part-{i}.bin").write_bytes(os.urandom(size // files))
    (folder / "_meta.yaml").write_bytes(b"")
    return store.upload_tree(key, folder, refs)


def test_a_tree_is_fetched_on_its_first_hold_and_read_from_the_cache_after(store, tmp_path):
    tree = put_tree(store, tmp_path, "1/n/out", 50 * KB, files=5)
    cache = ArtifactCache(store, tmp_path / "cache", 1024 * KB)
    with cache.hold(["1/n/out"]) as held:
        assert held == {"1/n/out": tmp_path / "cache" / "trees" / "1" / "n" / "out"}
        assert sorted(p.name for p in held["1/n/out"].iterdir()) == sorted(tree.files)
        assert (held["1/n/out"] / "part-3.bin").read_bytes() == (tmp_path / "src/1/n/out/part-3.bin").read_bytes()
    assert cache.stats() == {"entries": 1, "bytes": tree.size, "max_bytes": 1024 * KB, "hits": 0, "misses": 1,
                             "bytes_fetched": tree.size}
    again = ArtifactCache(store, tmp_path / "cache", 1024 * KB)  # (another process of the worker)
    with again.hold(["1/n/out"]) as held:
        assert (held["1/n/out"] / "part-0.bin").stat().st_size == 10 * KB
    assert again.stats() | {"hits": 1, "misses": 1, "bytes_fetched": tree.size} == again.stats()
    with pytest.raises(NotInStore, match="'1/n/none' is not in the store"):
        with cache.hold(["1/n/none"]):
            pass


def test_the_trees_a_tree_refers_to_are_fetched_with_it(store, tmp_path):
    put_tree(store, tmp_path, "1/images/out", 10 * KB)
    put_tree(store, tmp_path, "2/split/left", 10 * KB, refs=["1/images/out"])
    put_tree(store, tmp_path, "3/augment/out", 10 * KB, refs=["2/split/left", "1/images/out"])
    cache = ArtifactCache(store, tmp_path / "cache", 1024 * KB)
    with cache.hold(["3/augment/out"]) as held:
        assert set(held) == {"3/augment/out", "2/split/left", "1/images/out"}  # what it names too
        assert all(cache.path_of(k).is_dir() for k in ("3/augment/out", "2/split/left", "1/images/out"))
    assert (cache.stats()["entries"], cache.stats()["misses"]) == (3, 3)


def test_the_least_recently_used_tree_goes_first_when_the_cache_is_full(store, tmp_path):
    for key in ("a/n/out", "b/n/out", "c/n/out"):
        put_tree(store, tmp_path, key, 100 * KB)
    cache = ArtifactCache(store, tmp_path / "cache", 250 * KB)
    for key in ("a/n/out", "b/n/out", "a/n/out"):  # b is now the least recently used
        with cache.hold([key]):
            time.sleep(0.01)
    with cache.hold(["c/n/out"]):
        pass
    assert [cache.path_of(k).is_dir() for k in ("a/n/out", "b/n/out", "c/n/out")] == [True, False, True]
    stats = cache.stats()
    assert (stats["entries"], stats["hits"], stats["misses"]) == (2, 1, 3)
    assert stats["bytes"] <= 250 * KB


def test_a_held_tree_is_never_evicted_and_the_refusal_names_the_setting(store, tmp_path):
    for key in ("a/n/out", "b/n/out", "c/n/out"):
        put_tree(store, tmp_path, key, 100 * KB)
    cache = ArtifactCache(store, tmp_path / "cache", 250 * KB)
    with cache.hold(["a/n/out"]), cache.hold(["b/n/out"]):
        with pytest.raises(CacheFull) as e:
            with cache.hold(["c/n/out"]):
                pass
        assert "WORKER_CACHE_MB" in str(e.value) and "'c/n/out'" in str(e.value)
        assert cache.path_of("a/n/out").is_dir() and cache.path_of("b/n/out").is_dir()
        assert not cache.path_of("c/n/out").exists()
    with cache.hold(["c/n/out"]):  # once a node is done with them, they can go
        pass
    assert cache.path_of("c/n/out").is_dir()


def test_a_tree_larger_than_the_whole_cache_is_refused_without_emptying_it(store, tmp_path):
    put_tree(store, tmp_path, "a/n/out", 100 * KB)
    put_tree(store, tmp_path, "huge/n/out", 300 * KB)
    cache = ArtifactCache(store, tmp_path / "cache", 250 * KB)
    with cache.hold(["a/n/out"]):
        pass
    with pytest.raises(CacheFull, match="WORKER_CACHE_MB"):
        with cache.hold(["huge/n/out"]):
            pass
    assert cache.path_of("a/n/out").is_dir() and cache.stats()["entries"] == 1  # what it had, it keeps


def _hold_in_a_process(url, endpoint, root, key, start, results):
    cache = ArtifactCache(S3Store(url, endpoint), root, 64 * 1024 * KB)
    start.wait(30)
    with cache.hold([key]) as held:
        results.put(sorted((p.name, p.stat().st_size) for p in held[key].iterdir()))


def test_two_processes_holding_one_tree_download_it_once(store, s3_server, tmp_path):
    tree = put_tree(store, tmp_path, "5/n/out", 2 * 1024 * KB, files=40)
    context = multiprocessing.get_context("fork")  # (the children make their own boto3 clients)
    start, results = context.Barrier(2), context.Queue()
    procs = [context.Process(target=_hold_in_a_process, args=(store.url, s3_server.url, tmp_path / "cache", "5/n/out",
                                                             start, results)) for _ in range(2)]
    for p in procs:
        p.start()
    seen = [results.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(30)
    assert [p.exitcode for p in procs] == [0, 0]
    assert seen[0] == seen[1] == sorted((name, f["size"]) for name, f in tree.files.items())
    stats = ArtifactCache(store, tmp_path / "cache", 64 * 1024 * KB).stats()
    assert (stats["misses"], stats["hits"], stats["bytes_fetched"]) == (1, 1, tree.size)
    assert list((tmp_path / "cache" / ".state" / "incoming").iterdir()) == []


def test_a_tree_whose_folder_went_missing_is_fetched_again_in_its_own_room(store, tmp_path):
    put_tree(store, tmp_path, "a/n/out", 150 * KB)
    cache = ArtifactCache(store, tmp_path / "cache", 250 * KB)
    with cache.hold(["a/n/out"]):
        pass
    shutil.rmtree(cache.path_of("a/n/out"))  # (someone cleaned the disk by hand)
    with cache.hold(["a/n/out"]) as held:
        assert (held["a/n/out"] / "part-0.bin").stat().st_size == 150 * KB
    stats = cache.stats()
    assert (stats["entries"], stats["bytes"], stats["misses"]) == (1, 150 * KB, 2)


def test_a_download_left_half_way_by_a_killed_process_is_cleared_by_the_next_fetch(store, tmp_path):
    put_tree(store, tmp_path, "6/n/out", 10 * KB)
    cache = ArtifactCache(store, tmp_path / "cache", 1024 * KB)
    with cache.hold(["6/n/out"]):
        pass
    dead = subprocess.Popen(["true"])
    dead.wait()  # a process id that no process has now
    left = tmp_path / "cache" / ".state" / "incoming" / f"{dead.pid}-0123abcd"
    (left / "images").mkdir(parents=True)
    (left / "images" / "part.png").write_bytes(b"x" * 1000)  # what a SIGKILL mid-download leaves
    mine = tmp_path / "cache" / ".state" / "incoming" / f"{os.getpid()}-4567ef00"
    mine.mkdir()  # a live process's download under way is left alone
    put_tree(store, tmp_path, "7/n/out", 10 * KB)
    with cache.hold(["7/n/out"]):
        pass
    assert sorted(p.name for p in (tmp_path / "cache" / ".state" / "incoming").iterdir()) == [mine.name]


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("mount"), reason="a small disk of its own needs root")
def test_a_full_cache_disk_fails_the_fetch_naming_the_disk_and_leaves_nothing_half_written(store, tmp_path):
    """The cache's limit allows the tree, the worker's disk has no room for it (a disk shared with
    other things): CacheFull names the setting and the disk, and no partial download stays."""
    disk = tmp_path / "small-disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(disk)], capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"a small disk cannot be mounted here: {mounted.stderr.strip()}")
    try:
        put_tree(store, tmp_path, "9/n/out", 3 * 1024 * KB, files=3)
        cache = ArtifactCache(store, disk / "cache", 64 * 1024 * KB)
        with pytest.raises(CacheFull, match=r"WORKER_CACHE_DIR=.*small-disk/cache: no space left on this worker's disk "
                                             r"for '9/n/out' \(3\.1 MB\)"):
            with cache.hold(["9/n/out"]):
                pass
        assert list((disk / "cache" / ".state" / "incoming").iterdir()) == []
        assert cache.stats()["entries"] == 0
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def _hold_until_told(url, endpoint, root, key, start, results, done):
    cache = ArtifactCache(S3Store(url, endpoint), root, 1000 * KB)
    start.wait(30)
    try:
        with cache.hold([key]):
            results.put("held")
            done.wait(60)  # (a node reading it until the test has seen both)
    except CacheFull as e:
        results.put(f"full: {e}")


def test_two_fetches_side_by_side_never_fill_the_cache_past_its_limit(store, s3_server, tmp_path):
    """Two slots of a worker fetch two trees of 600 KB at once into a cache of 1,000 KB: the first
    to make room reserves it until its download ends, so the other is refused, naming the setting,
    instead of both landing (1,200 KB)."""
    for key in ("1/a/out", "2/b/out"):
        put_tree(store, tmp_path, key, 600 * KB, files=30)
    context = multiprocessing.get_context("fork")
    start, results, done = context.Barrier(2), context.Queue(), context.Event()
    procs = [context.Process(target=_hold_until_told, args=(store.url, s3_server.url, tmp_path / "cache", key,
                                                            start, results, done)) for key in ("1/a/out", "2/b/out")]
    for p in procs:
        p.start()
    seen = sorted(results.get(timeout=60) for _ in procs)
    done.set()
    for p in procs:
        p.join(30)
    assert seen[1] == "held" and seen[0].startswith("full: ") and "WORKER_CACHE_MB" in seen[0], seen
    stats = ArtifactCache(store, tmp_path / "cache", 1000 * KB).stats()
    assert stats["entries"] == 1 and stats["bytes"] <= 1000 * KB, stats
