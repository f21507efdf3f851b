"""The original's logging APIs, for the scripts of components: `azureml.core.Run` and MLflow's
module functions, recording through sdk.script.log_metric (the designer's metrics file).

    azureml_shim/azureml/core/run.py    Run.get_context(), run.log / log_list / log_row / log_table,
                                        tag, parent...; outside the designer an offline run that
                                        prints what it was asked to log, as the original's does
    mlflow_shim/mlflow/__init__.py      mlflow.log_metric(s), log_param(s), set_tag(s), start_run,
                                        autolog (a no-op that says so)
    mlflow_shim/mlflow/pytorch.py       mlflow.pytorch.log_model / save_model / load_model: an MLflow
                                        model folder in MLflow's layout; log_model keeps it as an output
                                        of the node (MLFLOW_MODELS_ENV says where)
    mlflow_shim/mlflow/pyfunc.py        mlflow.pyfunc.load_model(...).predict(...)

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
# where mlflow.pytorch.log_model keeps a model in a component's process: JSON {"outputs": {port:
# folder} of the outputs declared `type: mlflow_model`, "made": the folder of the output made for the
# node where none is declared} (modules/_component.py writes it, the MLflow shim reads it)
MLFLOW_MODELS_ENV = "DESIGNER_MLFLOW_MODELS"


def search_path() -> list[str]:
    """The folders to put first on a component process's PYTHONPATH: the azureml shim, and the
    MLflow shim unless this interpreter has a real mlflow."""
    return [str(AZUREML)] + ([] if importlib.util.find_spec("mlflow") else [str(MLFLOW)])
