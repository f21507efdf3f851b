"""The serving process's ASGI app (Starlette on uvicorn): POST /api/endpoints/<name>/score and
GET /healthz. designer/serving/__init__.py describes the whole process.

A scoring request: the endpoint (404), its key (401), a loaded model (503), the body's size
(413, from Content-Length before reading it, else while reading) and the time it takes to come
(408 past SERVING_BODY_SECONDS), then the images are parsed, their pixels counted from their
headers (413 past SERVING_MAX_IMAGE_PIXELS or SERVING_MAX_REQUEST_PIXELS, before any is decoded),
decoded and preprocessed on a decoding thread (400 / 413 naming the image) and scored by the
endpoint's Deployment (micro-batched). A request of more than LARGE_PIXELS is decoded on a thread
of its own (one at a time): other clients' small requests never queue behind it. An endpoint with
an entry script (scripts.py) gets the body as text (400 unless UTF-8), in its script's process,
and answers what run() returned. Every answer is JSON and names this replica (X-Served-By).
"""
import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "designer.settings")
django.setup()

import asyncio  # noqa: E402 - Django is set up first: the modules below read its models
import contextlib  # noqa: E402
import hmac  # noqa: E402
import logging  # noqa: E402
import socket  # noqa: E402
import time  # noqa: E402
from concurrent.futures import ThreadPoolExecutor  # noqa: E402
from pathlib import Path  # noqa: E402

from django.conf import settings  # noqa: E402
from starlette.applications import Starlette  # noqa: E402
from starlette.exceptions import HTTPException  # noqa: E402
from starlette.requests import Request  # noqa: E402
from starlette.responses import JSONResponse, Response  # noqa: E402
from starlette.routing import Route  # noqa: E402

from designer.engine import jsontext, paths  # noqa: E402
from designer.pipelines import artifact_store  # noqa: E402
from designer.serving import deployments, inputs, scripts  # noqa: E402
from designer.serving.config import Endpoints, Poller, Row, Served  # noqa: E402
from designer.serving.inputs import RequestError  # noqa: E402
from designer.serving.stats import Flusher, Stats  # noqa: E402

log = logging.getLogger(__name__)
REPLICA = f"{socket.gethostname()}:{os.getpid()}"
LARGE_PIXELS = 4_000_000  # a request declaring more is decoded on the `large` thread
HEADERS = {"X-Served-By": REPLICA}


class Server:
    """This process's state: the endpoints it serves, its counts, its threads."""

    def __init__(self):
        self.limits = deployments.Limits(
            max_image_bytes=settings.SERVING_MAX_IMAGE_BYTES, max_batch=settings.SERVING_MAX_BATCH,
            max_wait=settings.SERVING_MAX_WAIT_MS / 1000,
            threads=deployments.default_threads(settings.SERVING_THREADS, settings.SERVING_REPLICAS),
            max_image_pixels=settings.SERVING_MAX_IMAGE_PIXELS)
        self.script_limits = scripts.ScriptLimits(init_seconds=settings.SERVING_SCRIPT_INIT_SECONDS,
                                                  run_seconds=settings.SERVING_SCRIPT_SECONDS)
        cores = os.cpu_count() or 1
        self.runner = ThreadPoolExecutor(2, "serving-model")  # one call per Deployment at a time
        self.decoder = ThreadPoolExecutor(max(2, cores), "serving-decode")
        self.large = ThreadPoolExecutor(1, "serving-decode-large")  # requests of more than LARGE_PIXELS
        self.holds, self.held = contextlib.ExitStack(), {}  # the versions fetched from a bucket store
        self.endpoints = Endpoints(self.load, ThreadPoolExecutor(1, "serving-load"))
        self.stats = Stats()
        self.poller = Poller(self.endpoints, settings.SERVING_POLL_SECONDS)
        self.flusher = Flusher(REPLICA, self.stats, self.endpoints.report, settings.SERVING_FLUSH_SECONDS)

    def load(self, row: Row) -> deployments.Deployment | scripts.ScriptDeployment:
        root = self._root_of(row.folder)
        if row.script:
            folder = paths.inside(root, row.folder)
            return scripts.ScriptDeployment(row.name, row.version_id, row.serves, folder, row.script, row.script_name,
                                            self.script_limits, label=(row.model, row.version))
        return deployments.load(row.version_id, root, row.folder, self.limits, self.runner,
                                label=(row.model, row.version))

    def _root_of(self, folder: str) -> Path:
        """Where a version's folder is read: the store's folder, or (a bucket) this machine's cache,
        into which it is fetched once and held for as long as this process serves (an entry
        script may read its model's files at any time)."""
        root = artifact_store.get().local_root()
        if root is not None:
            return root
        if folder not in self.held:
            self.held[folder] = self.holds.enter_context(artifact_store.cache().hold([folder]))
        return artifact_store.cache_trees()

    def start(self):
        self.poller.poll()  # the endpoints known before the first request
        self.poller.start()
        self.flusher.flush()
        self.flusher.start()

    def stop(self):
        self.poller.stopping.set()
        self.flusher.stop()
        for served in list(self.endpoints.served.values()):
            if isinstance(served.deployment, scripts.ScriptDeployment):
                served.deployment.close(grace=0)
        self.decoder.shutdown(wait=False, cancel_futures=True)
        self.large.shutdown(wait=False, cancel_futures=True)


server: Server | None = None


@contextlib.asynccontextmanager
async def lifespan(app):
    global server
    server = Server()
    await asyncio.get_running_loop().run_in_executor(None, server.start)
    try:
        yield
    finally:
        await asyncio.get_running_loop().run_in_executor(None, server.stop)


def answer(status: int, document: dict, **headers) -> JSONResponse:
    return JSONResponse(document, status_code=status, headers={**HEADERS, **headers})


async def score(request: Request) -> JSONResponse:
    started = time.perf_counter()
    name = request.path_params["name"]
    served = server.endpoints.get(name)
    if served is None:
        return answer(404, {"error": f"no endpoint named {name!r}"})
    try:
        document = await _score(request, served)
        response = document if isinstance(document, Response) else answer(200, document)
    except (RequestError, scripts.ScriptError) as e:
        response = answer(e.status, {"error": str(e), **getattr(e, "details", {})}, **_extra_headers(e.status))
        server.stats.record(served.row.id, e.status, 0, str(e))
        return response
    except Exception as e:  # the model failed: said, counted, and logged with its traceback
        log.exception("endpoint %s: scoring failed", name)
        message = f"scoring failed on the server: {type(e).__name__}: {e}"
        server.stats.record(served.row.id, 500, 0, message)
        return answer(500, {"error": message})
    server.stats.record(served.row.id, 200, (time.perf_counter() - started) * 1000)
    return response


def _extra_headers(status: int) -> dict:
    if status == 401:
        return {"WWW-Authenticate": "Bearer"}
    if status == 503:
        return {"Retry-After": "1"}
    return {}


async def _score(request: Request, served: Served) -> dict | Response:
    row = served.row
    check_key(request.headers.get("authorization", ""), row)
    deployment = served.deployment
    if deployment is None:
        raise RequestError(503, f"endpoint {row.name!r} is not ready: {served.problem or 'its model is loading'}")
    body = await read_body(request, settings.SERVING_MAX_REQUEST_BYTES)
    if isinstance(deployment, scripts.ScriptDeployment):
        return await _run_script(deployment, body)
    content_type = request.headers.get("content-type", "")
    loop = asyncio.get_running_loop()
    deployment.decoding += 1
    try:
        arrays, images = await loop.run_in_executor(server.decoder, _prepare, deployment, content_type, body, None)
        if arrays is None:  # many pixels: decoded on the large requests' thread
            arrays, _ = await loop.run_in_executor(server.large, _prepare, deployment, content_type, body, images)
    finally:
        deployment.decoding -= 1
    probabilities = await deployment.predict(arrays)
    classes = deployment.classes
    predictions = []
    for p in probabilities.tolist():
        best = max(range(len(p)), key=p.__getitem__)
        predictions.append({"label": classes[best], "probabilities": dict(zip(classes, p))})
    model, version = deployment.label
    return {"endpoint": row.name, "model": model, "version": version, "classes": classes, "predictions": predictions}


async def _run_script(deployment: scripts.ScriptDeployment, body: bytes) -> Response:
    """The body, as text, to the script's run(raw_data) (the original passes it as it came: {"data": ...});
    its return value is the answer."""
    if not body.strip():
        raise RequestError(400, f"endpoint {deployment.endpoint!r}: the request has no body: its entry script's run() "
                                f"receives the body, e.g. JSON {{\"data\": ...}}")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as e:
        raise RequestError(400, f"endpoint {deployment.endpoint!r}: the request's body is given to its entry script as "
                                f"text: it must be UTF-8 (byte {e.start} is not), e.g. JSON {{\"data\": ...}}") from None
    return Response(await deployment.answer(text), media_type="application/json", headers=HEADERS)


def _prepare(deployment, content_type: str, body: bytes, images: list | None):
    """On a decoding thread: (the request's images decoded and preprocessed, None); or, for a
    request of more than LARGE_PIXELS seen first (`images` None), (None, its images) to be
    decoded on the large requests' thread."""
    if images is None:
        images = inputs.images(content_type, body, settings.SERVING_MAX_IMAGES)
        total = inputs.pixels(images, settings.SERVING_MAX_IMAGE_PIXELS, settings.SERVING_MAX_REQUEST_PIXELS)
        if total > LARGE_PIXELS:
            return None, images
    try:
        return deployment.prepare(images), None
    except deployments.ImageError as e:
        raise RequestError(e.status, str(e), index=e.index, filename=e.filename)


def check_key(header: str, row: Row) -> None:
    scheme, _, key = header.strip().partition(" ")
    key = key.strip()
    if scheme.lower() != "bearer" or not key:
        raise RequestError(401, f"endpoint {row.name!r} needs its key: send the header 'Authorization: Bearer <key>'")
    # every key compared, in constant time: how long it takes tells nothing of the keys
    if not sum(hmac.compare_digest(key.encode(), k.encode()) for k in row.keys):
        raise RequestError(401, f"wrong key for endpoint {row.name!r} (its keys are on its page; a regenerated key replaces the old one)")


async def read_body(request: Request, limit: int) -> bytes:
    """The body, refused (413) from its Content-Length before any of it is read, or as soon as
    more than `limit` bytes have come (a body sent without a length)."""
    declared = jsontext.whole_number(request.headers.get("content-length"))
    if declared is not None and declared > limit:
        raise RequestError(413, f"the request is {_mb(declared)}, the limit is {_mb(limit)} per request")
    body = bytearray()
    try:
        async with asyncio.timeout(settings.SERVING_BODY_SECONDS):
            async for chunk in request.stream():
                body += chunk
                if len(body) > limit:
                    raise RequestError(413, f"the request is over {_mb(limit)}, the limit per request")
    except TimeoutError:
        raise RequestError(408, f"the request's body did not come within {settings.SERVING_BODY_SECONDS:g} s "
                                f"({_mb(len(body))} had come; setting SERVING_BODY_SECONDS)") from None
    return bytes(body)


def _mb(n: int) -> str:
    return f"{n / 1024 / 1024:.1f} MB"


async def healthz(request: Request) -> JSONResponse:
    """This replica's name, whether it is ready (503 while an endpoint it will serve has no model
    loaded yet), what it serves (as its ServingReplica row says), and per endpoint its model calls
    and images scored since loaded (images / calls: the average batch)."""
    batching = {name: {"calls": s.deployment.calls, "images": s.deployment.scored}
                for name, s in list(server.endpoints.served.items()) if s.deployment is not None}
    ready = server.endpoints.ready()
    return answer(200 if ready else 503, {"replica": REPLICA, "ready": ready, "endpoints": server.endpoints.report(),
                                          "batching": batching})


async def not_found(request: Request, exc: HTTPException) -> JSONResponse:
    message = {404: f"no such path {request.url.path!r}: scoring is POST /api/endpoints/<name>/score",
               405: f"{request.method} is not allowed here: scoring is POST /api/endpoints/<name>/score"}
    return answer(exc.status_code, {"error": message.get(exc.status_code, exc.detail)})


app = Starlette(
    routes=[Route("/api/endpoints/{name}/score", score, methods=["POST"]), Route("/healthz", healthz, methods=["GET"])],
    exception_handlers={404: not_found, 405: not_found}, lifespan=lifespan)
