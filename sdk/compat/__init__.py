"""The original's logging APIs, for the scripts of components: `azureml.core.Run` and MLflow's
module functions, recording through sdk.script.log_metric (the designer's metrics file).

    azureml_shim/azureml/core/run.py    Run.get_context(), run.log / log_list / log_row / log_table,
                                        tag, parent...; outside the designer an offline run that
                                        prints what it was asked to log, as the original's does
    mlflow_shim/mlflow/__init__.py      mlflow.log_metric(s), log_param(s), set_tag(s), start_run,
                                        autolog (a no-op that says so)

Only a component's processes see them: supervision.command puts `search_path()` first on their
PYTHONPATH. The MLflow shim is left out where a real `mlflow` is installed (the script then logs
through it, as it would anywhere); the azureml shim extends its packages' paths, so that other
`azureml.*` packages of a real installation stay importable beside it.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

HERE = Path(__file__).resolve().parent
AZUREML = HERE / "azureml_shim"
MLFLOW = HERE / "mlflow_shim"


def search_path() -> list[str]:
    """The folders to put first on a component process's PYTHONPATH: the azureml shim, and the
    MLflow shim unless this interpreter has a real mlflow."""
    return [str(AZUREML)] + ([] if importlib.util.find_spec("mlflow") else [str(MLFLOW)])
