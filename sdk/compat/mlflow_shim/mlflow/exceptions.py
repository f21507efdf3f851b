"""`mlflow.exceptions.MlflowException`, as MLflow raises it (sdk/compat)."""
from __future__ import annotations


class MlflowException(Exception):
    def __init__(self, message, error_code: str = "INTERNAL_ERROR", **_kwargs):
        super().__init__(str(message))
        self.message = str(message)
        self.error_code = error_code
