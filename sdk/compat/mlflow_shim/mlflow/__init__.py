"""MLflow's logging functions as a script calls them (sdk/compat): in a component, the figures
are the node's metrics (sdk.script.log_metric: live charts, a sweep's primary metric).

    with mlflow.start_run():                       # or none: the first call starts it
        mlflow.log_param("learning_rate", 0.01)    # parameters and tags: lines of the driver log
        mlflow.set_tag("framework", "pytorch")
        mlflow.log_metric("val_acc", 0.91)         # numbered as it comes: 1, 2, 3... per name
        mlflow.log_metric("loss", 0.4, step=3)     # at step 3 (the last value of a step wins)
        mlflow.log_metrics({"loss": 0.4, "val_acc": 0.9}, step=3)

`autolog()` (and mlflow.pytorch.autolog()) is accepted and does nothing but say so: log the
figures with log_metric. `mlflow.pytorch` comes with `import mlflow`, as MLflow's does: its
log_model(model, "model") keeps an MLflow model folder as an output of the node, save_model(model,
path) writes one, load_model and `mlflow.pyfunc.load_model(...).predict(...)` read it back
(pytorch.py). Other artifacts are not stored: write them to an output folder.
The designer gives a component this module only where the worker has no real mlflow installed;
with one, the script logs through the real one, as it would anywhere.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Literal

from sdk.compat.recording import note, note_once, record

__version__ = "0+designer"


@dataclass
class RunInfo:
    run_id: str
    run_name: str = ""
    status: str = "RUNNING"


@dataclass
class RunData:
    metrics: dict = field(default_factory=dict)
    params: dict = field(default_factory=dict)
    tags: dict = field(default_factory=dict)


class ActiveRun:
    """What start_run() returns; a context manager that ends the run (FAILED on an exception)."""

    def __init__(self, run_name: str = "", tags: dict | None = None):
        self.info = RunInfo(uuid.uuid4().hex, run_name or "")
        self.data = RunData(tags=dict(tags or {}))

    def __enter__(self) -> ActiveRun:
        return self

    def __exit__(self, exc_type, exc, tb) -> Literal[False]:  # never swallows the exception
        end_run("FAILED" if exc_type else "FINISHED")
        return False


_runs: list[ActiveRun] = []


def start_run(run_id: str | None = None, experiment_id=None, run_name: str | None = None, nested: bool = False,
              tags: dict | None = None, description: str | None = None, **_kwargs) -> ActiveRun:
    if _runs and not nested:
        raise Exception(f"Run with UUID {_runs[-1].info.run_id} is already active. To start a nested run, "
                        f"call start_run with nested=True")
    run = ActiveRun(run_name or "", tags)
    if run_id:
        run.info.run_id = run_id
    _runs.append(run)
    return run


def end_run(status: str = "FINISHED") -> None:
    if _runs:
        _runs.pop().info.status = status


def active_run() -> ActiveRun | None:
    return _runs[-1] if _runs else None


def last_active_run() -> ActiveRun | None:
    return active_run()


def _run() -> ActiveRun:
    return _runs[-1] if _runs else start_run()


def log_metric(key: str, value, step: int | None = None, timestamp=None, synchronous=None, run_id=None,
               **_kwargs) -> None:
    if record("mlflow", key, value, step):
        _run().data.metrics[key] = float(value)


def log_metrics(metrics: dict, step: int | None = None, timestamp=None, synchronous=None, run_id=None,
                **_kwargs) -> None:
    for key, value in metrics.items():
        log_metric(key, value, step)


def log_param(key: str, value, synchronous=None) -> object:
    _run().data.params[key] = str(value)
    note(f"(mlflow) param {key}={value}")
    return value


def log_params(params: dict, synchronous=None, run_id=None) -> None:
    for key, value in params.items():
        log_param(key, value)


def set_tag(key: str, value, synchronous=None) -> None:
    _run().data.tags[key] = str(value)
    note(f"(mlflow) tag {key}={value}")


def set_tags(tags: dict, synchronous=None) -> None:
    for key, value in tags.items():
        set_tag(key, value)


def autolog(*_args, **_kwargs) -> None:
    note_once("autolog", "(mlflow) autolog() does nothing in the designer: log figures with mlflow.log_metric "
                         "(or log_metrics) to see them as the node's metrics")


def log_artifact(local_path: str, artifact_path: str | None = None, **_kwargs) -> None:
    note(f"(mlflow) log_artifact({local_path!r}): not stored; write files to an output folder to keep them")


def log_artifacts(local_dir: str, artifact_path: str | None = None, **_kwargs) -> None:
    log_artifact(local_dir, artifact_path)


def log_dict(dictionary: dict, artifact_file: str, **_kwargs) -> None:
    log_artifact(artifact_file)


def log_text(text: str, artifact_file: str, **_kwargs) -> None:
    log_artifact(artifact_file)


def set_experiment(experiment_name: str | None = None, experiment_id=None) -> None:
    pass


def set_tracking_uri(uri) -> None:
    pass


def get_tracking_uri() -> str:
    return "designer://node-metrics"


from . import pyfunc, pytorch  # noqa: E402  (as MLflow's `import mlflow` gives mlflow.pytorch)
from .exceptions import MlflowException  # noqa: E402

__all__ = ["ActiveRun", "MlflowException", "active_run", "autolog", "end_run", "log_artifact", "log_artifacts",
           "log_dict", "log_metric", "log_metrics", "log_param", "log_params", "log_text", "pyfunc", "pytorch",
           "set_tag", "set_tags", "start_run"]
