"""ModelDirectory: a trained model with its classes and transforms (written by Train PyTorch
Model, read by Score Image Model and Export to ONNX).

    <dir>/_meta.yaml     type: ModelDirectory, model_name, classes, best_epoch, validation_loss, ...
    <dir>/model.yaml     the untrained model's spec (untrained_model.py) and:
                         classes: [...]          the class of each output, in order
                         transforms: {...}       the inference recipe (transformation.py)
                         normalize: [mean, std]  applied after the transforms
                         best_epoch, epochs_run, validation_loss, validation_top1_accuracy,
                         history: [{epoch, training_loss, validation_loss, ...}, ...]
    <dir>/model.pt       the state_dict of the best epoch (torch.save; head sized for `classes`)

While a training runs, its processes may append to <dir>/metrics.jsonl (metrics.py); the
module removes it once the training is over.
"""
from __future__ import annotations

from pathlib import Path

import yaml

from sdk.errors import InvalidModelDirectoryError, prefixed
from sdk.formats import untrained_model
from sdk.formats.untrained_model import SPEC_FILE, read_spec, write_spec

TRAINED_STATE = "model.pt"
TYPE = "ModelDirectory"

__all__ = ["SPEC_FILE", "TRAINED_STATE", "TYPE", "read", "read_info", "read_start", "write_spec", "weights"]


def read(model_input, module_label: str, port_label: str = "Trained model") -> dict:
    """The model.yaml of a trained model input; anything else, or a model without weights or
    classes, is refused with an error naming the module and the port."""
    spec = read_spec(model_input, module_label, port_label, TYPE)
    path = Path(model_input.path)
    if not spec.get("classes") or not weights(path).is_file():
        raise InvalidModelDirectoryError(prefixed(
            module_label, f"the {port_label} ({path}) has no weights ({TRAINED_STATE}) or no class list"))
    return spec


def read_start(model_input, module_label: str, port_label: str) -> dict:
    """The model.yaml of what a training starts from: an UntrainedModelDirectory, or a trained
    ModelDirectory to fine-tune (its model.yaml is a superset of the untrained spec); anything
    else is refused with an error naming the module and the port."""
    kind = getattr(model_input, "type", None)
    if kind == TYPE:
        return read(model_input, module_label, port_label)
    if kind == untrained_model.TYPE:
        return read_spec(model_input, module_label, port_label)
    got = "nothing" if model_input is None else f"{kind or 'a directory without _meta.yaml'} ({model_input.path})"
    raise InvalidModelDirectoryError(prefixed(
        module_label, f"the {port_label} must be an {untrained_model.TYPE} (a PyTorch model from ResNet or DenseNet) "
                      f"or a {TYPE} (a trained model, to fine-tune), got {got}"))


def read_info(model_dir) -> dict:
    """model.yaml of a model folder given by its path (what a finished training left)."""
    return yaml.safe_load((Path(model_dir) / SPEC_FILE).read_text()) or {}


def weights(model_dir) -> Path:
    return Path(model_dir) / TRAINED_STATE
