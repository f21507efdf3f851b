"""One loaded model version (a Deployment): its ONNX Runtime session, its preprocessing, and the
micro-batcher that feeds the session.

Batching: a request's images are decoded and preprocessed on a thread (`prepare`), then queued
(`predict`). An idle model starts at once on what is queued, so a lone request waits for nothing;
while the model runs, requests pile up and the next call takes them all (up to `max_batch`
images). Before a call, the batcher waits at most `max_wait` seconds for requests that are still
being decoded, and only while there are some: it never waits on the chance that one may come.

The event loop owns the queue (no lock): `prepare` runs on the decoding threads, `session.run` on
the runner's threads (ONNX Runtime releases the GIL), everything else on the loop.
"""
from __future__ import annotations

import asyncio
import json
import os
from concurrent.futures import Executor
from dataclasses import dataclass

import numpy as np
import onnxruntime

from designer.engine import paths
from sdk.formats import onnx_model
from sdk.preprocess import BadImage, Preprocessor, load_image


@dataclass(frozen=True)
class Limits:
    max_image_bytes: int
    max_batch: int
    max_wait: float  # seconds
    threads: int  # ONNX Runtime's intra-op threads per call
    max_image_pixels: int = 40_000_000  # of one decoded image (sdk.preprocess.MAX_PIXELS)


class ImageError(ValueError):
    """An image of a request that cannot be scored: `status` 400 or 413, and which image."""

    def __init__(self, index: int, count: int, filename: str, reason: str, status: int):
        self.index, self.filename, self.reason, self.status = index, filename, reason, status
        name = f" ({filename!r})" if filename else ""
        super().__init__(f"image {index + 1} of {count}{name}: {reason}")


class Deployment:
    """A model version ready to score. `version_id` is its ModelVersion's id, `label` (model name,
    version number) what its answers say they come from."""

    def __init__(self, version_id: int, folder, limits: Limits, runner: Executor, label: tuple[str, int] = ("", 0)):
        self.version_id, self.label = version_id, label
        self.serves = (version_id, "")  # config.Row.serves: a version, no entry script
        self.limits = limits
        self.runner = runner
        self.preprocessing = json.loads((folder / onnx_model.PREPROCESSING_FILE).read_text())
        self.classes = [str(c) for c in self.preprocessing["classes"]]
        self.preprocess = Preprocessor(self.preprocessing)
        self.input = self.preprocessing.get("input") or onnx_model.INPUT_NAME
        self.output = self.preprocessing.get("output") or onnx_model.OUTPUT_NAME
        self.session = onnxruntime.InferenceSession(str(folder / onnx_model.ONNX_FILE), session_options(limits.threads),
                                                    providers=["CPUExecutionProvider"])
        self.pending: list[tuple[list[np.ndarray], asyncio.Future]] = []
        self.queued = 0  # images in `pending`
        self.decoding = 0  # requests being decoded for this deployment
        self.running = False
        self.arrived = asyncio.Event()
        self.calls = self.scored = 0  # model calls and images scored (GET /healthz shows them)
        self._warm_up()

    def _warm_up(self):
        """One call before the first request: ONNX Runtime plans its memory on the first run."""
        height, width = self.preprocessing.get("example_size") or (224, 224)
        self._run(np.zeros((1, 3, height, width), np.float32))

    # ------------------------------------------------------------------ on a decoding thread

    def prepare(self, images: list[tuple[str, bytes]]) -> list[np.ndarray]:
        """Each image decoded (converted to RGB as training did) and preprocessed; the first bad
        one raises ImageError naming it."""
        arrays = []
        for i, (filename, data) in enumerate(images):
            try:
                arrays.append(self.preprocess(load_image(data, max_bytes=self.limits.max_image_bytes,
                                                          max_pixels=self.limits.max_image_pixels)))
            except BadImage as e:
                raise ImageError(i, len(images), filename, str(e), getattr(e, "status", 400))
            except Exception as e:  # an image the decoder chokes on in a way load_image did not foresee
                raise ImageError(i, len(images), filename, f"cannot be read as an image ({type(e).__name__}: {e})", 400)
        return arrays

    # ------------------------------------------------------------------ on the event loop

    async def predict(self, arrays: list[np.ndarray]) -> np.ndarray:
        """Class probabilities (one row per image) of a request's preprocessed images."""
        future = asyncio.get_running_loop().create_future()
        self.pending.append((arrays, future))
        self.queued += len(arrays)
        self.arrived.set()
        if not self.running:
            self.running = True
            self._drainer = asyncio.ensure_future(self._drain())  # referenced: a task is otherwise weak
        return await future

    async def _drain(self):
        loop = asyncio.get_running_loop()
        try:
            while self.pending:
                await self._gather(loop)
                items = self._take()
                batch = [a for arrays, _ in items for a in arrays]
                self.calls, self.scored = self.calls + 1, self.scored + len(batch)
                try:
                    probabilities = await loop.run_in_executor(self.runner, self._run_batch, batch)
                except Exception as e:  # the model failed on this batch: its requests say why
                    for _, future in items:
                        if not future.done():
                            future.set_exception(e)
                    continue
                start = 0
                for arrays, future in items:
                    if not future.done():  # a request cancelled (client gone) takes nothing
                        future.set_result(probabilities[start:start + len(arrays)])
                    start += len(arrays)
        finally:
            self.running = False

    async def _gather(self, loop):
        """Wait (at most max_wait) for requests being decoded, while the batch is not full."""
        deadline = loop.time() + self.limits.max_wait
        while self.decoding and self.queued < self.limits.max_batch:
            remaining = deadline - loop.time()
            if remaining <= 0:
                return
            self.arrived.clear()
            try:
                await asyncio.wait_for(self.arrived.wait(), remaining)
            except TimeoutError:
                return

    def _take(self) -> list:
        """Whole requests from the queue's head, up to max_batch images (at least one request)."""
        items, images = [], 0
        while self.pending and (not items or images + len(self.pending[0][0]) <= self.limits.max_batch):
            item = self.pending.pop(0)
            items.append(item)
            images += len(item[0])
        self.queued -= images
        return items

    # ------------------------------------------------------------------ on a runner thread

    def _run_batch(self, arrays: list[np.ndarray]) -> np.ndarray:
        """Probabilities of `arrays` in order; images of different sizes (a recipe that keeps the
        aspect ratio) go through the model in one call per size."""
        shapes = {a.shape for a in arrays}
        if len(shapes) == 1:
            return self._run(np.stack(arrays))
        out = np.empty((len(arrays), len(self.classes)), np.float64)
        for shape in shapes:
            where = [i for i, a in enumerate(arrays) if a.shape == shape]
            out[where] = self._run(np.stack([arrays[i] for i in where]))
        return out

    def _run(self, batch: np.ndarray) -> np.ndarray:
        logits = self.session.run([self.output], {self.input: batch})[0].astype(np.float64)
        logits -= logits.max(axis=1, keepdims=True)
        e = np.exp(logits)
        return e / e.sum(axis=1, keepdims=True)


def session_options(threads: int) -> onnxruntime.SessionOptions:
    """`threads` intra-op threads that sleep when idle: on a small machine, spinning threads take
    the cores that decode the next requests."""
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return options


def default_threads(configured: int, replicas: int) -> int:
    """SERVING_THREADS, or the machine's cores shared among the replicas (at least one each)."""
    return configured or max(1, (os.cpu_count() or 1) // replicas)


def load(version_id: int, artifact_root, folder: str, limits: Limits, runner: Executor, label=("", 0)) -> Deployment:
    """The Deployment of a version's folder (relative to the artifact root); raises on anything
    that cannot be loaded (the caller reports it)."""
    path = paths.inside(artifact_root, folder)
    for name in (onnx_model.ONNX_FILE, onnx_model.PREPROCESSING_FILE):
        if not (path / name).is_file():
            raise FileNotFoundError(f"{name} is missing from the version's folder")
    return Deployment(version_id, path, limits, runner, label)
