"""`mlflow.pytorch` as a script calls it (sdk/compat): autolog() does nothing but say so;
log_model() and save_model() store nothing (write the model to an output folder with torch.save)."""
from __future__ import annotations

from sdk.compat.recording import note

from . import autolog as _autolog


def autolog(*args, **kwargs) -> None:
    _autolog(*args, **kwargs)


def log_model(pytorch_model=None, artifact_path: str | None = None, *args, **kwargs) -> None:
    note(f"(mlflow) mlflow.pytorch.log_model({artifact_path!r}): not stored; save the model to an output folder "
         f"(torch.save) to keep it")


def save_model(pytorch_model=None, path: str | None = None, *args, **kwargs) -> None:
    note(f"(mlflow) mlflow.pytorch.save_model({path!r}): not written; save the model to an output folder "
         f"(torch.save) to keep it")
