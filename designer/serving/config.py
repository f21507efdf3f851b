"""What a serving process serves: the Endpoint rows, read every SERVING_POLL_SECONDS by a thread,
and the Deployment loaded for each.

A row whose version changed gets its new Deployment loaded on a loader thread while the old one
goes on answering; the new one replaces it in one assignment once it is ready. A request holds
the Deployment it started on, so the requests queued on the old one finish there: a switch fails
no request. Keys and anything else of the row apply at the next poll. What a Deployment serves is
its version and its entry script (`Row.serves`): a new script is loaded as a new version is. A
Deployment replaced or no longer served is closed (an entry script's process ends) once the
requests it holds are answered.
"""
from __future__ import annotations

import functools
import hashlib
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass, replace
from pathlib import Path

from django.db import connection

from designer.engine import statuses
from designer.pipelines.models import Endpoint
from designer.serving.deployments import Deployment
from sdk.formats import custom_model

log = logging.getLogger(__name__)
MLFLOW_SCRIPT = Path(__file__).with_name("mlflow_score.py")  # an MLflow model's entry script, read as text
RETRY_LOAD_SECONDS = 30.0  # a version that failed to load is tried again (the artifact store had a hiccup?)


@dataclass(frozen=True)
class Row:
    """An Endpoint row as the serving process needs it."""

    id: int
    name: str
    model: str
    keys: tuple[str, ...]
    revision: int
    version_id: int
    version: int  # its number (1, 2, ...)
    folder: str
    status: str
    has_onnx: bool
    error: str
    script: str = ""  # the entry script's source ("": the ONNX image classifier)
    script_name: str = ""

    @property
    def serves(self) -> tuple:
        """What a Deployment of this row serves: its version and its entry script."""
        digest = hashlib.sha256(f"{self.script_name}\0{self.script}".encode()).hexdigest() if self.script else ""
        return self.version_id, digest


@dataclass(frozen=True)
class Served:
    """An endpoint's state in this process: its latest row, the Deployment answering (None before
    a first one is loaded), the row revision that Deployment is current at, and why the row's
    version is not served yet ("" when it is), `failed` when it could not be loaded."""

    row: Row
    deployment: Deployment | None = None
    applied: int | None = None
    problem: str = ""
    failed: bool = False


def read_rows() -> dict[str, Row]:
    """Every endpoint, in one query."""
    query = Endpoint.objects.select_related("version__model").only(
        "id", "name", "primary_key", "secondary_key", "revision", "version__id", "version__version", "version__folder",
        "version__status", "version__has_onnx", "version__error", "version__format", "version__model__name",
        "entry_script", "entry_script_name")
    return {e.name: Row(id=e.id, name=e.name, model=e.version.model.name, keys=tuple(k for k in (e.primary_key, e.secondary_key) if k),
                        revision=e.revision, version_id=e.version.id, version=e.version.version, folder=e.version.folder,
                        status=e.version.status, has_onnx=e.version.has_onnx, error=e.version.error,
                        **_script(e.entry_script, e.entry_script_name, e.version.format))
            for e in query}


def _script(source: str, name: str, model_format: str) -> dict:
    """The row's entry script: its own, or for an MLflow model deployed without one, the designer's
    (mlflow_score.py, run as a user's script is: its own process, which may import torch)."""
    if not source and model_format == custom_model.MLFLOW:
        return {"script": _mlflow_script(), "script_name": MLFLOW_SCRIPT.name}
    return {"script": source, "script_name": name}


@functools.cache
def _mlflow_script() -> str:
    return MLFLOW_SCRIPT.read_text(encoding="utf-8")  # once per process, not at every poll


def not_loadable(row: Row) -> str:
    """Why the row's version cannot be loaded ("" when it can); an entry script loads any folder."""
    if row.script:
        return ""
    if row.status == statuses.PREPARING:
        return f"version {row.version} of {row.model} is still being prepared (packaged for serving)"
    if row.status == statuses.FAILED:
        return f"version {row.version} of {row.model} failed to package: {row.error or 'no reason recorded'}"
    if not row.has_onnx:
        return f"version {row.version} of {row.model} has no ONNX model to serve"
    return ""


class Endpoints:
    """name -> Served. The event loop reads `served` without a lock (one dict lookup); the poller
    and the loader threads change it under `_lock`, one whole entry at a time."""

    def __init__(self, load: Callable[[Row], Deployment], loader: Executor):
        self.served: dict[str, Served] = {}
        self._load, self._loader = load, loader
        self._rows: dict[str, Row] = {}
        self._loading: dict[str, int] = {}  # name -> version id being loaded
        self._failures: dict[str, tuple[int, int, float]] = {}  # name -> (version id, revision, when) that failed
        self._lock = threading.Lock()

    def get(self, name: str) -> Served | None:
        return self.served.get(name)

    def apply(self, rows: dict[str, Row]) -> None:
        with self._lock:
            self._rows = rows
            for name in set(self.served) - set(rows):
                _close(self.served.pop(name).deployment)
                self._failures.pop(name, None)
            for row in rows.values():
                self._apply(row)

    def _apply(self, row: Row) -> None:
        current = self.served.get(row.name) or Served(row)
        deployment = current.deployment
        if deployment is not None and getattr(deployment, "serves", (deployment.version_id, "")) == row.serves:
            self.served[row.name] = Served(row, deployment, row.revision)
            return
        why = not_loadable(row)
        if why:
            self.served[row.name] = replace(current, row=row, problem=why, failed=row.status == statuses.FAILED)
        elif self._loading.get(row.name) == row.serves or self._failed_lately(row):
            self.served[row.name] = replace(current, row=row)
        else:
            self._loading[row.name] = row.serves
            self.served[row.name] = replace(current, row=row, problem=f"loading version {row.version} of {row.model}", failed=False)
            if row.script:  # an init() may take minutes: it holds up no other endpoint's load
                threading.Thread(target=self._load_version, args=(row,), name=f"serving-load-{row.name}", daemon=True).start()
            else:
                self._loader.submit(self._load_version, row)

    def _failed_lately(self, row: Row) -> bool:
        failed = self._failures.get(row.name)
        return failed is not None and failed[:2] == (row.serves, row.revision) and \
            time.monotonic() - failed[2] < RETRY_LOAD_SECONDS

    def ready(self) -> bool:
        """False while an endpoint has no model to answer with yet and one is being loaded (a new
        or restarted replica): a load balancer's health check then sends requests elsewhere."""
        with self._lock:
            return not any(name in self._loading and s.deployment is None for name, s in self.served.items())

    def _load_version(self, row: Row) -> None:
        try:
            deployment, error = self._load(row), ""
        except Exception as e:  # a broken file, a model ONNX Runtime cannot run...: shown on the endpoint
            deployment, error = None, f"version {row.version} of {row.model} could not be loaded: {type(e).__name__}: {e}"
            log.warning("endpoint %s: %s", row.name, error)
        with self._lock:
            if self._loading.get(row.name) == row.serves:
                del self._loading[row.name]
            latest, current = self._rows.get(row.name), self.served.get(row.name)
            if latest is None or current is None or latest.serves != row.serves:
                _close(deployment)
                return  # deleted or switched again meanwhile: the next poll decides
            if deployment is not None:
                if current.deployment is not deployment:
                    _close(current.deployment)
                self.served[row.name] = Served(latest, deployment, latest.revision)
            else:
                self._failures[row.name] = (row.serves, latest.revision, time.monotonic())
                self.served[row.name] = replace(current, row=latest, problem=error, failed=True)

    def report(self) -> dict:
        """ServingReplica.loaded: {name: {version: id served, revision: n it is current at, error}}."""
        return {name: {"version": s.deployment.version_id if s.deployment else None, "revision": s.applied,
                       "error": s.problem if s.failed else ""}
                for name, s in sorted(self.served.items())}


def _close(deployment) -> None:
    """An entry script's process ends (after the requests it holds); an ONNX session is freed with it."""
    if deployment is not None and hasattr(deployment, "close"):
        deployment.close()


class Poller(threading.Thread):
    """Reads the Endpoint rows every `interval` seconds; when the database cannot be reached, the
    last rows read go on being served."""

    def __init__(self, endpoints: Endpoints, interval: float):
        super().__init__(name="serving-config", daemon=True)
        self.endpoints, self.interval = endpoints, interval
        self.stopping = threading.Event()
        self._failing = False

    def poll(self) -> None:
        try:
            self.endpoints.apply(read_rows())
            self._failing = False
        except Exception as e:
            if not self._failing:  # once per outage, not twice a second
                log.warning("cannot read the endpoints (serving what was read before): %s", e)
            self._failing = True
            connection.close()

    def run(self):
        while not self.stopping.wait(self.interval):
            self.poll()
        connection.close()
