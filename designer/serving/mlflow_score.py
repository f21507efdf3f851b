"""The entry script of an MLflow model deployed without one (the original's no-code deployment of an
`mlflow_model`): config.py gives its source to an endpoint whose version is an MLflow model folder
and that has no script of its own; it runs in the script's own process (scripts.py,
script_host.py), like a user's, never in the serving process itself (which imports no torch).

    POST .../score  {"input_data": [[0.1, 0.2, 0.3, 0.4], ...]}          (Azure ML's request)
                    {"input_data": {"columns": [...], "index": [...], "data": [[...]]}}
                    {"inputs": [[...]]}, {"instances": [[...]]}, {"dataframe_split": {...}},
                    {"dataframe_records": [{...}, ...]}                     (MLflow's scoring server)
    -> [[...], ...]  the model's output for each row, as Azure ML answers

`mlflow.pyfunc.load_model` loads it (MLflow's own where a real mlflow is installed, else the
designer's, sdk/compat); a tensor input goes in as float32. A body it cannot read is answered 400
(the original's AMLResponse) naming what it expects, as is an input the model refuses (its shape).
"""
import json
import os

import mlflow.pyfunc
import numpy as np
import pandas as pd
from azureml.contrib.services.aml_response import AMLResponse
from mlflow.exceptions import MlflowException

KEYS = ("input_data", "inputs", "instances", "dataframe_split", "dataframe_records")
EXPECTED = ('expected JSON {"input_data": [[...], ...]} (one row per input, shaped as the model\'s input), or '
            '{"input_data": {"columns": [...], "data": [[...]]}}, or MLflow\'s "inputs", "instances", '
            '"dataframe_split", "dataframe_records"')
model = None


def init():
    global model
    model = mlflow.pyfunc.load_model(os.environ["AZUREML_MODEL_DIR"])


def run(raw_data):
    try:
        data = model_input(json.loads(raw_data))
    except (ValueError, TypeError) as e:  # json.JSONDecodeError is a ValueError
        return AMLResponse(f"the request cannot be scored: {e}", 400)
    try:
        predictions = model.predict(data)
    except (RuntimeError, MlflowException) as e:  # torch's refusal of the input's shape or type
        return AMLResponse(f"the model cannot score this input: {str(e).splitlines()[0][:300]}", 400)
    if isinstance(predictions, pd.DataFrame):
        return predictions.to_numpy().tolist()
    return predictions


def model_input(body):
    """The body's input as the model's pyfunc takes it: a float32 array, or a DataFrame."""
    if not isinstance(body, dict) or not any(k in body for k in KEYS):
        found = f"an object of {', '.join(map(repr, list(body)[:5]))}" if isinstance(body, dict) else f"a {type(body).__name__}"
        raise ValueError(f"{EXPECTED}; got {found}")
    key = next(k for k in KEYS if k in body)
    value = body[key]
    if key == "dataframe_records":
        return pd.DataFrame.from_records(value)
    if key == "dataframe_split" or (key == "input_data" and isinstance(value, dict)):
        if not isinstance(value, dict) or not isinstance(value.get("data"), list):
            raise ValueError(f'"{key}" is a split table: an object with "data" (a list of rows) and "columns"')
        return pd.DataFrame(value["data"], columns=value.get("columns"), index=value.get("index"))
    try:
        array = np.asarray(value, dtype=np.float32)
    except (ValueError, TypeError) as e:
        raise ValueError(f'"{key}" is not an array of numbers of one shape: {str(e).splitlines()[0][:200]}') from None
    if array.ndim == 0:
        raise ValueError(f'"{key}" is one number: send a list of inputs, e.g. [[0.1, 0.2]]')
    return array
