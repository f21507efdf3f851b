"""The scoring endpoints' tests: a real model (resnet18 at 64 px, random weights, exported by
Export to ONNX's own code), its registry rows, a real serving process, and an HTTP client."""
from __future__ import annotations

import base64
import http.client
import io
import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path
from urllib.parse import urlparse

import numpy as np
import torch
from django.conf import settings
from PIL import Image

from designer.engine import executor, statuses
from designer.pipelines.models import Endpoint, ModelVersion, RegisteredModel, ServingReplica
from modules.export_to_onnx import ExportToOnnx
from sdk.formats import onnx_model
from sdk.formats import transformation as T
from sdk.formats.meta import artifact
from sdk.preprocess import load_image
from tests.modules.model_helpers import run as run_module
from tests.servers import free_port
from tests.workers import ROOT, worker_database_url
from training.models import build_model, write_trained
from training.transforms import build_transform

SIZE = 64
CLASSES = ["cat", "dog", "bird"]
NORMALIZE = [[0.485, 0.456, 0.406], [0.229, 0.224, 0.225]]
SPEC = {"family": "resnet", "model_name": "resnet18", "pretrained": False, "weights": None, "kwargs": {}}


# --------------------------------------------------------------------------- a model, exported


class Model:
    """A trained-model folder exported to ONNX (model.onnx + preprocessing.json in `folder`), and
    the torch model it came from."""

    def __init__(self, work: Path, seed: int, size: int = SIZE, classes=CLASSES):
        torch.manual_seed(seed)
        self.net = build_model(SPEC, len(classes)).eval()
        self.recipe = T.inference_recipe(T.make_recipe([T.step("resize", size=size), T.step("center_crop", size=size)]))
        trained = work / f"trained-{seed}"
        trained.mkdir(parents=True)
        info = {"classes": list(classes), "transforms": self.recipe, "normalize": NORMALIZE, "model_name": "resnet18"}
        write_trained(trained, SPEC, self.net.state_dict(), info)
        executor.write_meta(trained, "ModelDirectory", {"model_name": "resnet18", "classes": list(classes)})
        outputs, _ = run_module(ExportToOnnx, work / f"export-{seed}", trained_model=artifact(trained))
        self.folder = Path(outputs["onnx_model"].path)
        self.classes = list(classes)

    def copy_to(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        for name in (onnx_model.ONNX_FILE, onnx_model.PREPROCESSING_FILE):
            shutil.copy(self.folder / name, folder / name)

    def torch_probabilities(self, data: bytes) -> list[float]:
        """What torch says of an image: converted as training did, the training side's transform."""
        tensor = build_transform(self.recipe, T.INFERENCE, NORMALIZE)(load_image(data))
        with torch.inference_mode():
            return torch.softmax(self.net(tensor[None]), dim=1)[0].tolist()


def register(owner, model: Model, name: str, number: int = 1, registered: RegisteredModel | None = None) -> ModelVersion:
    """A ready version of `name` holding `model` (its folder under ARTIFACT_ROOT/models)."""
    registered = registered or RegisteredModel.objects.create(owner=owner, name=name)
    relative = f"models/{owner.id}/{registered.id}/{number}"
    model.copy_to(Path(settings.ARTIFACT_ROOT) / relative)
    return ModelVersion.objects.create(model=registered, version=number, folder=relative, status=statuses.READY, has_onnx=True)


def deploy(version: ModelVersion, name: str) -> Endpoint:
    return Endpoint.objects.create(owner=version.model.owner, name=name, version=version,
                                   primary_key=uuid.uuid4().hex, secondary_key=uuid.uuid4().hex)


# --------------------------------------------------------------------------- images


def png(size=(40, 30), mode="RGB", seed=0) -> bytes:
    rng = np.random.default_rng(seed)
    channels = {"RGB": 3, "RGBA": 4, "L": 1}[mode]
    pixels = rng.integers(0, 256, (size[1], size[0], channels), dtype=np.uint8)
    image = Image.fromarray(pixels[:, :, 0] if mode == "L" else pixels, mode)
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


def multipart(files: list[tuple[str, str, bytes]]) -> tuple[bytes, str]:
    """(body, content type) of (field, filename, data) parts."""
    boundary = uuid.uuid4().hex
    body = b""
    for field, filename, data in files:
        body += (f"--{boundary}\r\nContent-Disposition: form-data; name=\"{field}\"; filename=\"{filename}\"\r\n"
                 f"Content-Type: application/octet-stream\r\n\r\n").encode() + data + b"\r\n"
    return body + f"--{boundary}--\r\n".encode(), f"multipart/form-data; boundary={boundary}"


def as_json(images: list[bytes]) -> tuple[bytes, str]:
    return json.dumps({"images": [base64.b64encode(i).decode() for i in images]}).encode(), "application/json"


# --------------------------------------------------------------------------- the serving process


class Serving:
    """`python -m designer.serving` on a free port, on the test database."""

    def __init__(self, log_dir: Path, replicas: int = 1, **env):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_dir / f"serving-{self.port}.log"
        env = {**os.environ, "DATABASE_URL": worker_database_url(), "SERVING_POLL_SECONDS": "0.2",
               "SERVING_FLUSH_SECONDS": "0.3", **env}
        env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "designer.serving", "--port", str(self.port), "--replicas", str(replicas)],
                cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def wait_up(self, timeout: float = 60) -> Serving:
        deadline = time.monotonic() + timeout
        while self.health() is None:
            self.check_alive()
            assert time.monotonic() < deadline, f"the serving process did not answer /healthz in {timeout} s:\n{self.log()}"
            time.sleep(0.05)
        return self

    def health(self) -> dict | None:
        try:
            status, document, _ = request(self.url + "/healthz", method="GET")
            return document if status in (200, 503) else None  # 503: up, still loading a model
        except OSError:
            return None

    def wait_serving(self, endpoint: Endpoint, timeout: float = 60) -> dict:
        """Until this process serves `endpoint` at its current revision (its /healthz says so)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.check_alive()
            loaded = ((self.health() or {}).get("endpoints") or {}).get(endpoint.name) or {}
            if loaded.get("revision") == endpoint.revision and loaded.get("version") == endpoint.version_id:
                return loaded
            time.sleep(0.05)
        raise TimeoutError(f"endpoint {endpoint.name} not served at revision {endpoint.revision}: {self.health()}\n{self.log()}")

    def replicas(self, endpoint: Endpoint, count: int, timeout: float = 60) -> list[ServingReplica]:
        """The ServingReplica rows of `count` processes serving `endpoint` at its current revision."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.check_alive()
            pids = self.pids()
            rows = [r for r in ServingReplica.objects.all() if int(r.name.rsplit(":", 1)[1]) in pids
                    and (r.loaded.get(endpoint.name) or {}).get("revision") == endpoint.revision]
            if len(rows) >= count:
                return rows
            time.sleep(0.1)
        raise TimeoutError(f"not {count} replicas serving {endpoint.name}: {list(ServingReplica.objects.values())}\n{self.log()}")

    def pids(self) -> set[int]:
        """This process and its children (the replicas, with --replicas N): other serving processes
        of the test session serve the same database."""
        children = set()
        for task in Path(f"/proc/{self.proc.pid}/task").glob("*"):
            children |= {int(p) for p in (task / "children").read_text().split()}
        return {self.proc.pid} | children

    def check_alive(self):
        if self.proc.poll() is not None:
            raise RuntimeError(f"the serving process exited ({self.proc.returncode}):\n{self.log()}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, 9)
                self.proc.wait()


def request(url: str, body: bytes = b"", content_type: str = "", key: str | None = None, method: str = "POST",
            connection: http.client.HTTPConnection | None = None, headers: dict | None = None):
    """(status, JSON document, headers); `connection` keeps one connection alive across calls."""
    parsed = urlparse(url)
    own = connection is None
    conn = connection or http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=60)
    try:
        sent = dict(headers or {})
        if content_type:
            sent["Content-Type"] = content_type
        if key is not None:
            sent["Authorization"] = f"Bearer {key}"
        conn.request(method, parsed.path, body=body if method == "POST" else None, headers=sent)
        response = conn.getresponse()
        data = response.read()
        return response.status, json.loads(data) if data else None, response.headers  # case-insensitive
    finally:
        if own:
            conn.close()


def score_url(serving: Serving, endpoint: Endpoint | str) -> str:
    return f"{serving.url}/api/endpoints/{getattr(endpoint, 'name', endpoint)}/score"
