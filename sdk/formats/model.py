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

A script of one's own (a component, examples/components/) writes the same folder with `write`:

    torch.save(model.state_dict(), model.weights(out))      # a torchvision model, head sized for classes
    model.write(out, model_name="resnet18", classes=classes, transforms=recipe, normalize=[mean, std])
"""
from __future__ import annotations

from pathlib import Path

import yaml

from sdk.errors import InvalidModelDirectoryError, prefixed
from sdk.formats import untrained_model
from sdk.formats.meta import write_meta
from sdk.formats.untrained_model import SPEC_FILE, read_spec, write_spec

TRAINED_STATE = "model.pt"
TYPE = "ModelDirectory"

__all__ = ["SPEC_FILE", "TRAINED_STATE", "TYPE", "read", "read_info", "read_start", "write", "write_spec", "weights"]
# the figures of model.yaml that _meta.yaml repeats (what the pane and the registry show)
_META_FIELDS = ("best_epoch", "validation_loss", "validation_top1_accuracy", "fine_tuned_from")


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


def write(out, *, model_name: str, classes: list[str], transforms: dict | None = None,
          normalize: list | None = None, kwargs: dict | None = None, **info) -> Path:
    """model.yaml and _meta.yaml of a trained ModelDirectory whose weights are (or will be) at
    weights(out): a torchvision `model_name` built with `kwargs` and a head of len(classes)
    outputs. `transforms`: the inference recipe (sdk/formats/transformation.py) Score Image Model
    applies, then `normalize` ([mean, std]); `info`: more fields (best_epoch, history, ...)."""
    if not model_name or not isinstance(model_name, str):
        raise ValueError("a ModelDirectory needs model_name: the torchvision name of its model (e.g. resnet18)")
    if not classes or not all(isinstance(c, str) and c for c in classes):
        raise ValueError(f"a ModelDirectory needs classes: a non-empty list of class names, got {classes!r}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    spec = {"model_name": model_name, "kwargs": dict(kwargs or {}), "classes": list(classes),
            "transforms": transforms, "normalize": [list(v) for v in normalize] if normalize else None, **info}
    write_spec(out, spec)
    write_meta(out, TYPE, {"model_name": model_name, "classes": list(classes),
                           **{k: info[k] for k in _META_FIELDS if info.get(k) is not None}})
    return out
