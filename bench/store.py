"""The artifact store on a bucket: the product's transfers against plain boto3, the bytes a worker's
cache moves for nodes that read the same input, and the web process's memory while it streams a
large output, against one S3 server on the loopback.

    .venv/bin/python bench/store.py        # SIZE_MB=1024 (the large artifact) INPUT_MB=200 (part 2's input) UP_ROUNDS=2

About 5 minutes on a quiet 2-core machine, most of it part 1's two downloads (moto's ranged GETs,
below: their cost grows as the square of SIZE_MB; SIZE_MB=256 takes a sixteenth of it).

The server is moto's server mode (tests/s3server.py) in a process of its own, spoken to over HTTP
on 127.0.0.1. moto is a Python server that keeps every object itself (in memory up to 5 MB, in
its temporary files beyond), so the figures are those of the client path against that server,
not of a disk-backed S3 server (SeaweedFS, MinIO, Ceph RGW) or of AWS. moto answers a ranged GET
by reading the whole object and slicing it: a download in 8 MB parts of an object of N bytes
makes it read N x N / 8 MB bytes, so both sides' downloads of part 1 are bounded by moto, not by
the client (the ratio still compares the same requests to the same server).

1. One SIZE_MB file (os.urandom blocks of 16 MB repeated) as a tree: uploaded by the product
   (S3Store.upload_tree: SHA-256 of every file for the manifest, then boto3's multipart upload
   with the product's TransferConfig) and downloaded by the product (a fresh ArtifactCache's
   `hold`: the manifest, then boto3's download_file with the product's TransferConfig), against
   plain boto3 `upload_file` / `download_file` with the default TransferConfig, same server, same
   file. MB/s of each and the product's over plain's (target >= 0.8x each way): the uploads the
   best of UP_ROUNDS a side, alternated, the downloads once a side. The SHA-256 pass is part of
   the product's upload: its time alone (store.scan_tree on the same folder, the file in the page
   cache, right after each product upload) is shown too, and the upload's ratio without it.
2. A chain of 3 "nodes" on one worker cache: each holds (ArtifactCache.hold) the same INPUT_MB
   input tree (a file of half of it and 100 files of the rest) plus a small tree of its own
   (1 MB): the cache's `bytes_fetched` against the bytes the nodes need, each tree counted once
   (target <= 1.05x); the bytes of every GetObject answer, counted on the client, as a check of
   the cache's own count.
3. The real web app (daphne, SQLite migrated in a temporary folder, DEBUG=true, ARTIFACT_STORE on
   the bucket): a Run and a NodeRun whose output `out` is part 1's tree, a signed-in user's
   GET /api/runs/<run>/nodes/<node>/files/out/<file> read to nowhere, the daphne process's VmRSS
   read every 50 ms and its VmHWM (the kernel's peak, reset before): how much it grew over its
   RSS before the download (target: flat, < 64 MB whatever the size). A small file of another
   output is downloaded first, so that what a download imports is loaded before the baseline.
"""
import contextlib
import datetime
import hashlib
import http.client
import os
import shutil
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
MB = 2**20
SIZE_MB = int(os.environ.get("SIZE_MB", "1024"))
INPUT_MB = int(os.environ.get("INPUT_MB", "200"))
UP_ROUNDS = int(os.environ.get("UP_ROUNDS", "2"))
BUCKET = "artifacts"
PREFIX = "bench"
NODE = "train"
TRANSFER_TARGET = 0.8
FETCH_TARGET = 1.05
RSS_TARGET_MB = 64
SAMPLE_S = 0.05


def machine() -> str:
    model = "unknown CPU"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    cores = len(os.sched_getaffinity(0))
    memory = next((int(line.split()[1]) / 2**20 for line in Path("/proc/meminfo").read_text().splitlines()
                   if line.startswith("MemTotal:")), 0)
    return (f"machine: {model}, {cores} cores, {memory:.0f} GiB, {datetime.date.today().isoformat()}, "
            f"load average {load()}, Python {sys.version.split()[0]}")


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main() -> int:
    print(machine(), flush=True)
    (ROOT / "var").mkdir(exist_ok=True)
    data = Path(tempfile.mkdtemp(prefix="bench-store-", dir=ROOT / "var"))
    (data / "static").mkdir()  # STATIC_ROOT: WhiteNoise warns when it is missing
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    for name in [k for k in os.environ if k.startswith("AWS_")]:
        del os.environ[name]  # (a developer's own profile or endpoint must not take part)
    for name in ("DATABASE_URL", "CELERY_BROKER_URL", "CHANNEL_LAYER_URL", "ARTIFACT_ROOT"):
        os.environ.pop(name, None)  # the embedded defaults, in this bench's own folder
    # before tests.s3server is imported: it imports tests.conftest, which loads the settings
    os.environ.update(DESIGNER_DATA_DIR=str(data), DEBUG="true", DJANGO_SETTINGS_MODULE="designer.settings",
                      SECRET_KEY="bench-store-" + os.urandom(24).hex(), AWS_CONFIG_FILE=os.devnull,
                      AWS_SHARED_CREDENTIALS_FILE=os.devnull, ARTIFACT_STORE=f"s3://{BUCKET}/{PREFIX}",
                      ARTIFACT_STORE_ENDPOINT_URL=url, AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing",
                      AWS_DEFAULT_REGION="us-east-1")
    from tests.s3server import S3Server

    server = S3Server(BUCKET, port=port)
    assert all(os.environ[k] == v for k, v in server.env(prefix=PREFIX).items()), server.env(prefix=PREFIX)
    started = time.monotonic()
    server.start()
    print(f"server: moto {_version('moto')} (server mode, one process) at {url}, bucket {BUCKET!r}; boto3 "
          f"{_version('boto3')}. moto keeps objects itself (memory, and temporary files past 5 MB): these are the "
          f"figures of the client path, not of a disk-backed S3 server", flush=True)
    try:
        import django

        django.setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        run, user = _run_rows()
        store = _open_store()
        key = f"{run.pk}/{NODE}/out"
        results = [transfers(store, server, data, key)]
        results.append(chain(store, data, run.pk))
        results.append(web_memory(store, data, run, user, key))
    finally:
        server.stop()
        shutil.rmtree(data, ignore_errors=True)
    print(f"took {time.monotonic() - started:.0f} s; load average at the end {load()}")
    missed = [r for r in results if r is False]
    print("targets met" if not missed and None not in results else
          "TARGETS MISSED" if missed else "targets met where measured (a part skipped)")
    return 1 if missed else 0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _version(package: str) -> str:
    from importlib.metadata import version

    return version(package)


def _open_store():
    from django.conf import settings

    try:
        from designer.engine.stores import open_store
    except ImportError:  # (before store.py was split)
        from designer.engine.store import open_store
    return open_store(settings.ARTIFACT_STORE, settings.ARTIFACT_STORE_ENDPOINT_URL)


def _run_rows():
    """A user, and a completed Run with one completed NodeRun whose outputs are keys in the bucket."""
    from django.contrib.auth import get_user_model

    from designer.pipelines.models import NodeRun, Run

    user = get_user_model().objects.create_user("bench")
    run = Run.objects.create(owner=user, name="bench-store", status="completed",
                             snapshot={"nodes": [{"id": NODE, "kind": "toy"}], "links": []})
    NodeRun.objects.create(run=run, node_id=NODE, kind="toy", status="completed",
                           outputs={"out": f"{run.pk}/{NODE}/out", "small": f"{run.pk}/{NODE}/small"})
    return run, user


def _write(path: Path, size: int, block: bytes | None = None) -> Path:
    """`size` bytes: a random block repeated (written at the disk's pace, never compressible per block)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    block = block or os.urandom(min(size, 16 * MB) or 1)
    with path.open("wb") as f:
        left = size
        while left > 0:
            f.write(block[:left])
            left -= len(block)
    return path


def _verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


# ---------------------------------------------------------------- 1. a large artifact up and down


def transfers(store, server, data: Path, key: str) -> bool:
    import boto3

    from designer.engine.artifact_cache import ArtifactCache
    from designer.engine.store import scan_tree

    size = SIZE_MB * MB
    folder = data / "big"
    _write(folder / "big.bin", size)
    plain = boto3.session.Session().client("s3", endpoint_url=server.url)  # default config and TransferConfig
    plain_key = "plain/big.bin"
    warm = _write(data / "warm.bin", 16 * MB)  # connections made and boto's models loaded on both sides
    store.put_file("warm/product.bin", warm)
    plain.upload_file(str(warm), BUCKET, "warm/plain.bin")

    print(f"\n1. one file of {SIZE_MB} MB as a tree (the file in the page cache); uploads best of {UP_ROUNDS} rounds a "
          f"side (in the order product, plain, plain, product, ...), downloads once a side:", flush=True)
    product_ups, plain_ups, shas = [], [], []
    for side in (["product", "plain", "plain", "product"] * UP_ROUNDS)[:2 * UP_ROUNDS]:
        t = time.perf_counter()
        if side == "product":
            manifest = store.upload_tree(key, folder)
            product_ups.append(time.perf_counter() - t)
            t = time.perf_counter()
            scan_tree(folder)  # its SHA-256 pass alone, right after
            shas.append(time.perf_counter() - t)
        else:
            plain.upload_file(str(folder / "big.bin"), BUCKET, plain_key)
            plain_ups.append(time.perf_counter() - t)
    product_up, plain_up, sha_s = min(product_ups), min(plain_ups), min(shas)

    cache = ArtifactCache(store, data / "cache-1", 4 * size)
    t = time.perf_counter()
    with cache.hold([key]) as paths:
        product_down = time.perf_counter() - t
        got = paths[key] / "big.bin"
        assert got.stat().st_size == size, got.stat().st_size
        digest_ok = _digest(got) == manifest.files["big.bin"]["sha256"]
    shutil.rmtree(data / "cache-1")
    target = data / "plain-download.bin"
    t = time.perf_counter()
    plain.download_file(BUCKET, plain_key, str(target))
    plain_down = time.perf_counter() - t
    assert target.stat().st_size == size, target.stat().st_size
    target.unlink()
    plain.delete_object(Bucket=BUCKET, Key=plain_key)  # (moto's memory and temporary files)

    def rate(seconds: float) -> float:
        return SIZE_MB / seconds

    up, down = rate(product_up) / rate(plain_up), rate(product_down) / rate(plain_down)
    bare = rate(product_up - sha_s) / rate(plain_up)
    print(f"   upload   product (S3Store.upload_tree)  {rate(product_up):7.1f} MB/s ({product_up:5.1f} s, of which "
          f"SHA-256 of the file for the manifest about {sha_s:.1f} s: {rate(sha_s):.0f} MB/s, measured apart)")
    print(f"            plain boto3 upload_file        {rate(plain_up):7.1f} MB/s ({plain_up:5.1f} s)")
    print(f"            every round (s)                product {', '.join(f'{x:.1f}' for x in product_ups)}; plain "
          f"{', '.join(f'{x:.1f}' for x in plain_ups)}; SHA-256 {', '.join(f'{x:.1f}' for x in shas)}")
    print(f"            product / plain                {up:7.2f}x  (target >= {TRANSFER_TARGET}x: {_verdict(up >= TRANSFER_TARGET)}); "
          f"without the SHA-256 pass {bare:.2f}x")
    print(f"   download product (ArtifactCache.hold)   {rate(product_down):7.1f} MB/s ({product_down:5.1f} s; the bytes "
          f"{'match' if digest_ok else 'DO NOT MATCH'} the manifest's SHA-256, checked by this bench)")
    print(f"            plain boto3 download_file      {rate(plain_down):7.1f} MB/s ({plain_down:5.1f} s)")
    print(f"            product / plain                {down:7.2f}x  (target >= {TRANSFER_TARGET}x: "
          f"{_verdict(down >= TRANSFER_TARGET)}); both bounded by moto's ranged GETs (each reads the whole object)",
          flush=True)
    return up >= TRANSFER_TARGET and down >= TRANSFER_TARGET and digest_ok


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(8 * MB):
            h.update(chunk)
    return h.hexdigest()


# ---------------------------------------------------------------- 2. the same input, three nodes, one cache


def chain(store, data: Path, run_id: int, nodes: int = 3) -> bool:
    from designer.engine.artifact_cache import ArtifactCache

    total = INPUT_MB * MB
    block = os.urandom(16 * MB)
    source = data / "input"
    _write(source / "data.bin", total // 2, block)
    smalls = 100
    for i in range(smalls):  # the rest in 100 small files (uploaded and fetched side by side)
        _write(source / "shards" / f"{i:04d}.bin", (total - total // 2) // smalls, os.urandom(64 * 1024))
    input_key = f"{run_id}/source/out"
    need = {input_key: store.upload_tree(input_key, source).size}
    shutil.rmtree(source)
    own = []
    for n in range(1, nodes + 1):
        folder = data / f"params-{n}"
        for i in range(4):
            _write(folder / f"p{i}.bin", 256 * 1024)
        own.append(f"{run_id}/node{n}/params")
        need[own[-1]] = store.upload_tree(own[-1], folder).size
        shutil.rmtree(folder)

    wire = {"data": 0, "manifests": 0, "requests": 0}
    lock = threading.Lock()
    get_object = store.s3.get_object

    def counted(**kwargs):  # what the server sent, counted on the client (s3transfer calls client.get_object)
        answer = get_object(**kwargs)
        with lock:
            wire["manifests" if "/_manifests/" in f"/{kwargs['Key']}" else "data"] += int(answer["ContentLength"])
            wire["requests"] += 1
        return answer

    store.s3.get_object = counted
    cache = ArtifactCache(store, data / "cache-2", 4 * total)
    holds = []
    try:
        for n in range(nodes):
            t = time.perf_counter()
            with cache.hold([input_key, own[n]]) as paths:
                holds.append(time.perf_counter() - t)
                seen = sum(f.stat().st_size for p in paths.values() for f in p.rglob("*") if f.is_file())
                assert seen == need[input_key] + need[own[n]], (seen, need)
    finally:
        del store.s3.get_object
    stats = cache.stats()
    shutil.rmtree(data / "cache-2")
    needed = sum(need.values())
    ratio = stats["bytes_fetched"] / needed
    print(f"\n2. {nodes} nodes on one worker cache, each holding the same {need[input_key] / MB:.0f} MB input "
          f"(1 file of {total // 2 / MB:.0f} MB + {smalls} small files) and a {need[own[0]] / MB:.0f} MB tree of its own:")
    print(f"   bytes the nodes need (each tree once)  {needed / MB:8.1f} MB")
    print(f"   cache's bytes_fetched                  {stats['bytes_fetched'] / MB:8.1f} MB  ({ratio:.3f}x; target <= "
          f"{FETCH_TARGET}x: {_verdict(ratio <= FETCH_TARGET)}); hits {stats['hits']}, misses {stats['misses']}")
    print(f"   GetObject bodies seen by the client    {wire['data'] / MB:8.1f} MB of files ({wire['data'] / needed:.3f}x) + "
          f"{wire['manifests'] / 1024:.1f} KB of manifests, {wire['requests']} requests")
    print(f"   hold() wall time per node              {', '.join(f'{s:.2f} s' for s in holds)}  "
          f"(the first fetches; the others find the input here)", flush=True)
    return ratio <= FETCH_TARGET and wire["data"] <= FETCH_TARGET * needed


# ---------------------------------------------------------------- 3. the web process streaming a large file


def web_memory(store, data: Path, run, user, key: str) -> bool | None:
    from django.test import Client

    from tests.servers import Daphne

    small = data / "small"
    _write(small / "small.bin", 4 * MB)
    store.upload_tree(f"{run.pk}/{NODE}/small", small)
    client = Client()
    client.force_login(user)
    cookie = f"sessionid={client.cookies['sessionid'].value}"
    print(f"\n3. the web process (daphne, ARTIFACT_STORE on the bucket) streaming the {SIZE_MB} MB file to a client "
          f"that reads it to nowhere:", flush=True)
    web = Daphne(dict(os.environ, TMPDIR=str(data)), name="daphne-bench-store")
    try:
        web.wait_ready()
        path = f"/api/runs/{run.pk}/nodes/{NODE}/files/%s"
        status, got, _ = _download(web.port, path % "small/small.bin", cookie)
        if status != 200 or got != 4 * MB:
            print(f"   skipped: the warm-up download answered {status} with {got} bytes\n{web.log()[-1500:]}")
            return None
        time.sleep(1)
        pid = web.proc.pid
        Path(f"/proc/{pid}/clear_refs").write_text("5")  # VmHWM back to VmRSS
        before = _memory(pid, "VmRSS")
        peak = [before]
        stop = threading.Event()

        def sample():
            while not stop.wait(SAMPLE_S):
                with contextlib.suppress(OSError, StopIteration):
                    peak.append(_memory(pid, "VmRSS"))

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        t = time.perf_counter()
        try:
            status, got, length = _download(web.port, path % "out/big.bin", cookie)
        finally:
            took = time.perf_counter() - t
            stop.set()
            sampler.join()
        hwm = _memory(pid, "VmHWM")
    finally:
        web.stop()
    if status != 200 or got != SIZE_MB * MB:
        print(f"   skipped: the download answered {status} with {got} bytes of {SIZE_MB * MB}")
        return None
    grew = max(max(peak), hwm) - before
    print(f"   {got / MB:.0f} MB in {took:.1f} s ({got / MB / took:.1f} MB/s; Content-Length {length}); daphne's VmRSS "
          f"{before:.0f} MB before, peak {max(peak):.0f} MB in {len(peak) - 1} samples every {SAMPLE_S * 1000:.0f} ms, "
          f"VmHWM {hwm:.0f} MB")
    print(f"   grew by {grew:.0f} MB  (target < {RSS_TARGET_MB} MB: {_verdict(grew < RSS_TARGET_MB)})", flush=True)
    return grew < RSS_TARGET_MB


def _download(port: int, path: str, cookie: str) -> tuple[int, int, str | None]:
    """(status, bytes read, Content-Length) of a GET read 1 MB at a time and dropped."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    try:
        conn.request("GET", path, headers={"Cookie": cookie})
        answer = conn.getresponse()
        got = 0
        while chunk := answer.read(MB):
            got += len(chunk)
        return answer.status, got, answer.getheader("Content-Length")
    finally:
        conn.close()


def _memory(pid: int, field: str) -> float:
    """VmRSS (now) or VmHWM (the peak) of a process, in MB."""
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith(field + ":")).split()[1]) / 1024


if __name__ == "__main__":
    sys.exit(main())
