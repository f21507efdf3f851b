"""`mlflow.pyfunc.load_model(uri).predict(data)` for an MLflow pytorch model (sdk/compat), as MLflow's
pytorch flavour answers it: a NumPy array (or a tensor) goes in as a tensor, a pandas DataFrame as its
float32 values; the model runs in eval mode without gradients; a tensor comes back as a NumPy array
(a DataFrame for a DataFrame, with its index)."""
from __future__ import annotations

from . import pytorch
from .exceptions import MlflowException


class PyFuncModel:
    def __init__(self, model, folder):
        self._model = model
        self.model_uri = str(folder)
        self.loader_module = "mlflow.pytorch"

    def unwrap_python_model(self):
        return self._model

    def predict(self, data, params=None):
        import numpy as np
        import torch

        frame = None
        if type(data).__name__ == "DataFrame":
            frame, data = data, data.to_numpy(dtype=np.float32)
        if isinstance(data, np.ndarray):
            data = torch.from_numpy(data)
        elif not isinstance(data, torch.Tensor):
            raise TypeError("The PyTorch flavor does not support List or Dict input types. Please use a pandas.DataFrame "
                            "or a numpy.ndarray")
        self._model.eval()
        with torch.no_grad():
            try:
                predictions = self._model(data)
            except RuntimeError as e:
                raise MlflowException(f"the model refused an input of shape {tuple(data.shape)} and type {data.dtype}: "
                                      f"{str(e).splitlines()[0][:300]}") from None
        if isinstance(predictions, torch.Tensor):
            predictions = predictions.detach().cpu().numpy()
        if frame is not None:
            import pandas as pd
            return pd.DataFrame(predictions, index=frame.index)
        return predictions


def load_model(model_uri, suppress_warnings: bool = False, dst_path=None, **_kwargs) -> PyFuncModel:
    folder = pytorch.local_folder(model_uri)
    flavor = pytorch._flavor(folder, "python_function")
    if flavor.get("loader_module") != "mlflow.pytorch":
        raise MlflowException(f"{model_uri}: a model of {flavor.get('loader_module')!r}: the designer loads MLflow's "
                              f"pytorch flavour only (mlflow.pytorch)")
    return PyFuncModel(pytorch.load_model(folder), folder)
