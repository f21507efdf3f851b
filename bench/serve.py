"""Scoring endpoints: latency and throughput of a real serving process against ONNX Runtime called
directly in one process, on the same images.

    .venv/bin/python bench/serve.py        # REQUESTS=2000 IMAGES=64 REPLICAS=1 ROUNDS=5 (SERVING_THREADS: both sides)

The model is resnet18 at 64 px (random weights, exported by Export to ONNX's own code) deployed as
an endpoint on the embedded defaults (SQLite in a temporary folder); `python -m designer.serving`
serves it. Requests carry one PNG image each (multipart, as `curl -F` sends it), over kept-alive
connections, from an asyncio load generator in this process, at concurrency 1 and 16.

The direct side, in this process, per image: decode + preprocess (sdk/preprocess.py, as the
server does) + session.run with batch 1, and session.run alone on the preprocessed array, with
the server's session options (as many threads, idle threads sleeping rather than spinning), so
that the difference is what serving adds. The sides alternate, ROUNDS times; each round compares
them (the overhead, the ratio), and the median of the rounds is judged against the targets (a
burst of load from another process must not decide them).

Targets: at concurrency 1, the endpoint's p50 over the direct p50 (decode + preprocess + run)
by less than 5 ms; at concurrency 16, at least 0.8x the direct throughput (micro-batching).
The load generator shares the machine (and its cores) with the server.
"""
import asyncio
import io
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
REQUESTS = int(os.environ.get("REQUESTS", "2000"))
IMAGES = int(os.environ.get("IMAGES", "64"))
REPLICAS = int(os.environ.get("REPLICAS", "1"))
ROUNDS = int(os.environ.get("ROUNDS", "5"))
OVERHEAD_TARGET_MS = 5.0
THROUGHPUT_TARGET = 0.8


def main() -> int:
    data = Path(tempfile.mkdtemp(prefix="bench-serve-", dir=ROOT / "var"))
    os.environ.update({"DESIGNER_DATA_DIR": str(data), "ARTIFACT_ROOT": str(data / "artifacts"),
                       "DJANGO_SETTINGS_MODULE": "designer.settings"})
    os.environ.pop("DATABASE_URL", None)  # the embedded defaults: SQLite in the temporary folder
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    try:
        return _measure(data)
    finally:
        shutil.rmtree(data, ignore_errors=True)


def _images() -> list[bytes]:
    """IMAGES photos-like PNGs of 80 to 143 pixels a side: smooth shapes and a little noise."""
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(0)
    out = []
    for i in range(IMAGES):
        w, h = 80 + (i * 7) % 64, 80 + (i * 13) % 64
        y, x = np.mgrid[0:h, 0:w]
        base = np.stack([np.sin(x / (5 + i % 7)) * 80 + 128, np.cos(y / (4 + i % 5)) * 80 + 128, (x + y) % 256], axis=2)
        pixels = np.clip(base + rng.normal(0, 8, base.shape), 0, 255).astype(np.uint8)
        buffer = io.BytesIO()
        Image.fromarray(pixels).save(buffer, "PNG")
        out.append(buffer.getvalue())
    return out


def _measure(data: Path) -> int:
    import torch
    from django.contrib.auth import get_user_model

    from tests.serving.helpers import Model, Serving, deploy, register

    torch.set_num_threads(1)
    images = _images()
    model = Model(data / "work", seed=0)
    owner = get_user_model().objects.create_user("bench")
    endpoint = deploy(register(owner, model, "bench"), "bench")
    server = Serving(data, replicas=REPLICAS, SERVING_POLL_SECONDS="0.5", SERVING_FLUSH_SECONDS="1")
    rounds = []
    try:
        server.wait_up()
        if REPLICAS > 1:
            server.replicas(endpoint, REPLICAS)
        else:
            server.wait_serving(endpoint)
        url, key = f"/api/endpoints/{endpoint.name}/score", endpoint.primary_key
        asyncio.run(_load(server.port, url, key, images, 16, 200))  # warm-up
        _header()
        for r in range(ROUNDS):  # alternately, so that a burst of load elsewhere does not decide a ratio
            direct = _direct(model, images)
            one = asyncio.run(_load(server.port, url, key, images, 1, REQUESTS // 2))
            before = _batching(server, endpoint.name)
            sixteen = asyncio.run(_load(server.port, url, key, images, 16, REQUESTS))
            after = _batching(server, endpoint.name)
            batch = (after["images"] - before["images"]) / max(1, after["calls"] - before["calls"]) if before and after else None
            rounds.append(_round(r + 1, direct, one, sixteen, batch))
    finally:
        server.stop()
    return _summary(rounds)


def _batching(server, name: str) -> dict | None:
    """The server's model calls and images scored so far (replica 1's when there are several)."""
    return ((server.health() or {}).get("batching") or {}).get(name)


def _direct(model, images: list[bytes]) -> dict:
    """ONNX Runtime in this process, one image at a time: decode + preprocess + run, and run alone."""
    import json

    import onnxruntime
    from django.conf import settings

    from designer.serving import deployments
    from sdk.formats import onnx_model
    from sdk.preprocess import Preprocessor, load_image

    options = deployments.session_options(deployments.default_threads(settings.SERVING_THREADS, REPLICAS))
    session = onnxruntime.InferenceSession(str(model.folder / onnx_model.ONNX_FILE), options, providers=["CPUExecutionProvider"])
    preprocess = Preprocessor(json.loads((model.folder / onnx_model.PREPROCESSING_FILE).read_text()))
    feeds = [{onnx_model.INPUT_NAME: preprocess(load_image(i))[None]} for i in images]
    for f in feeds[:20]:  # warm-up
        session.run(None, f)
    full, run_only = [], []
    count = max(REQUESTS // 2, len(images))
    started = time.perf_counter()
    for k in range(count):
        t = time.perf_counter()
        session.run(None, {onnx_model.INPUT_NAME: preprocess(load_image(images[k % len(images)]))[None]})
        full.append((time.perf_counter() - t) * 1000)
    full_rate = count / (time.perf_counter() - started)
    started = time.perf_counter()
    for k in range(count):
        t = time.perf_counter()
        session.run(None, feeds[k % len(feeds)])
        run_only.append((time.perf_counter() - t) * 1000)
    run_rate = count / (time.perf_counter() - started)
    return {"full": _figures(full, full_rate), "run": _figures(run_only, run_rate)}


def _figures(ms: list[float], rate: float) -> dict:
    ms = sorted(ms)
    return {"p50": statistics.median(ms), "p95": ms[int(len(ms) * 0.95) - 1], "rate": rate, "count": len(ms)}


async def _load(port: int, path: str, key: str, images: list[bytes], concurrency: int, total: int) -> dict:
    """`total` requests from `concurrency` kept-alive connections; figures of the 200 answers,
    and how many were not 200."""
    bodies = [_request(path, key, i) for i in images]
    latencies, failures, sent = [], [], iter(range(total))

    async def client():
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            for k in sent:
                t = time.perf_counter()
                writer.write(bodies[k % len(bodies)])
                status, _ = await _response(reader)
                (latencies if status == 200 else failures).append((time.perf_counter() - t) * 1000)
        finally:
            writer.close()

    started = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(concurrency)))
    figures = _figures(latencies, len(latencies) / (time.perf_counter() - started))
    return {**figures, "failures": len(failures), "concurrency": concurrency}


def _request(path: str, key: str, image: bytes) -> bytes:
    boundary = "benchboundary0123456789"
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"image\"; filename=\"image.png\"\r\n"
            f"Content-Type: image/png\r\n\r\n").encode() + image + f"\r\n--{boundary}--\r\n".encode()
    head = (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {key}\r\n"
            f"Content-Type: multipart/form-data; boundary={boundary}\r\nContent-Length: {len(body)}\r\n\r\n")
    return head.encode() + body


async def _response(reader) -> tuple[int, bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    return status, await reader.readexactly(length)


def _header():
    from django.conf import settings

    from designer.serving import deployments

    threads = deployments.default_threads(settings.SERVING_THREADS, REPLICAS)
    print(f"resnet18 at 64 px (ONNX Runtime {_ort_version()}, {threads} thread(s) per model call on both sides), one PNG per "
          f"request, {IMAGES} images (80-143 px); {os.cpu_count()} cores shared by the server ({REPLICAS} replica(s)), this "
          f"load generator (asyncio, kept-alive connections) and whatever else runs on the machine")
    print("direct: ONNX Runtime in this process, batch 1 (decode + preprocess + run | run alone); endpoint: requests of one image")


def _round(n: int, direct: dict, one: dict, sixteen: dict, batch: float | None) -> dict:
    full, run = direct["full"], direct["run"]
    print(f"round {n}: direct p50 {full['p50']:5.2f} | {run['p50']:5.2f} ms, p95 {full['p95']:5.2f} | {run['p95']:5.2f} ms, "
          f"{full['rate']:6.1f} | {run['rate']:6.1f} images/s")
    for r in (one, sixteen):
        print(f"         endpoint at concurrency {r['concurrency']:2d}: p50 {r['p50']:6.2f} ms, p95 {r['p95']:6.2f} ms, "
              f"{r['rate']:6.1f} requests/s ({r['count']} answered, {r['failures']} failed)"
              + (f", {batch:.1f} images per model call" if r is sixteen and batch else ""))
    figures = {"overhead": one["p50"] - full["p50"], "overhead_run": one["p50"] - run["p50"],
               "ratio": sixteen["rate"] / full["rate"], "ratio_run": sixteen["rate"] / run["rate"],
               "failures": one["failures"] + sixteen["failures"]}
    print(f"         p50 overhead at 1: {figures['overhead']:+.2f} ms ({figures['overhead_run']:+.2f} ms over run alone); "
          f"throughput at 16: {figures['ratio']:.2f}x direct ({figures['ratio_run']:.2f}x run alone)", flush=True)
    return figures


def _summary(rounds: list[dict]) -> int:
    """The median round's figures against the targets."""
    def median(name):
        return statistics.median(r[name] for r in rounds)

    overhead, ratio = median("overhead"), median("ratio")
    failures = sum(r["failures"] for r in rounds)
    print(f"median of {len(rounds)} rounds: p50 overhead at concurrency 1 {overhead:+.2f} ms over decode + preprocess + run "
          f"({median('overhead_run'):+.2f} ms over run alone)   (target < {OVERHEAD_TARGET_MS} ms)")
    print(f"median of {len(rounds)} rounds: throughput at concurrency 16 {ratio:.2f}x direct decode + preprocess + run "
          f"({median('ratio_run'):.2f}x run alone)   (target >= {THROUGHPUT_TARGET}x)   failed requests: {failures}")
    met = overhead < OVERHEAD_TARGET_MS and ratio >= THROUGHPUT_TARGET and not failures
    print("targets met" if met else "TARGET MISSED")
    return 0 if met else 1


def _ort_version() -> str:
    import onnxruntime

    return onnxruntime.__version__


if __name__ == "__main__":
    sys.exit(main())
