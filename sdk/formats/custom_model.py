"""A model folder a script wrote in a format of its own: what a component's output declared as a
model (`type: ModelDirectory`, or Azure ML's `custom_model` and `mlflow_model`, or `OnnxModel`)
may hold. It is registered as it is (designer/pipelines/registry/service.py) and served by an entry
script (designer/serving/scripts.py), or by the ONNX image path when it has what that needs.

    designer   a trained ModelDirectory (model.yaml naming model_name and classes, model.pt): what
               Train PyTorch Model writes; registering packages it (torch.export, ONNX)
    onnx       an ONNX file (*.onnx) at its top; with preprocessing.json beside model.onnx (what
               Export to ONNX writes), also servable without an entry script
    mlflow     an MLflow model folder (its MLmodel file at the top)
    pytorch    weights or a whole model saved by torch.save (*.pt, *.pth, *.pt2, *.bin, *.safetensors)
    folder     anything else
"""
from __future__ import annotations

from pathlib import Path

import yaml

DESIGNER, ONNX, MLFLOW, PYTORCH, FOLDER = "designer", "onnx", "mlflow", "pytorch", "folder"
FORMATS = (DESIGNER, ONNX, MLFLOW, PYTORCH, FOLDER)
MODEL_TYPES = ("ModelDirectory", "OnnxModel")  # the port types of an output that is a model
MLMODEL_FILE = "MLmodel"
WEIGHT_SUFFIXES = (".pt", ".pth", ".pt2", ".bin", ".safetensors", ".ckpt")
_SPEC, _WEIGHTS, _ONNX, _PREPROCESSING = "model.yaml", "model.pt", "model.onnx", "preprocessing.json"


def format_of(folder) -> str:
    """Which of FORMATS the folder holds (its top level only: nothing is opened but model.yaml)."""
    folder = Path(folder)
    names = {p.name for p in folder.iterdir() if p.is_file()} if folder.is_dir() else set()
    if _SPEC in names and _WEIGHTS in names and _names_a_model(folder / _SPEC):
        return DESIGNER
    if MLMODEL_FILE in names:
        return MLFLOW
    if any(n.endswith(".onnx") for n in names):
        return ONNX
    if any(n.endswith(WEIGHT_SUFFIXES) for n in names):
        return PYTORCH
    return FOLDER


def image_onnx(folder) -> bool:
    """Whether the folder has what the ONNX image endpoint loads (model.onnx and preprocessing.json)."""
    return (Path(folder) / _ONNX).is_file() and (Path(folder) / _PREPROCESSING).is_file()


def _names_a_model(spec: Path) -> bool:
    try:
        info = yaml.safe_load(spec.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return False
    return isinstance(info, dict) and isinstance(info.get("model_name"), str) and bool(info.get("classes"))
