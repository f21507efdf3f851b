"""torchvision model building, and the torch side of the model directories: their state files.
The directories' layout and their model.yaml are in sdk/formats/untrained_model.py and model.py.
"""
from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlparse

import torch
import torchvision
from torch import nn

from sdk.errors import ModuleError
from sdk.formats import model, untrained_model


class WeightsNotAvailableError(ModuleError):
    """Pretrained weights are not in the torch hub cache (we never download them)."""


# --------------------------------------------------------------------------- pretrained weights


def weights_enum(model_name: str):
    """The torchvision weights the designer uses for `model_name` (the DEFAULT, i.e. best, ones)."""
    return torchvision.models.get_model_weights(model_name).DEFAULT


def cached_weights_path(weights) -> Path:
    """Where torch.hub keeps the file of `weights`: <hub dir>/checkpoints/<file name of the URL>."""
    return Path(torch.hub.get_dir()) / "checkpoints" / os.path.basename(urlparse(weights.url).path)


def build_pretrained(model_name: str, kwargs: dict) -> nn.Module:
    """Build through torchvision's own code (`weights=...`), from the hub cache only."""
    weights = weights_enum(model_name)
    path = cached_weights_path(weights)
    if not path.is_file():
        raise WeightsNotAvailableError(
            f"the pretrained weights of {model_name} ({weights}) are not on this machine: "
            f"put the file {path.name} (from {weights.url}) in the folder {path.parent}, "
            f"or set Pretrained off to start from random weights")
    try:
        return torchvision.models.get_model(model_name, weights=weights, **kwargs)
    except Exception as e:  # a truncated or foreign file: name it
        raise WeightsNotAvailableError(f"cannot load the pretrained weights file {path}: {e}") from e


# --------------------------------------------------------------------------- state files


def write_untrained(out: Path, spec: dict, initial_state: dict | None = None) -> None:
    """An UntrainedModelDirectory: its spec, and the pretrained state when there is one."""
    untrained_model.write_spec(out, spec)
    if initial_state is not None:
        torch.save(initial_state, Path(out) / untrained_model.INITIAL_STATE)


# --------------------------------------------------------------------------- building


def build_model(spec: dict, num_classes: int, model_dir: Path | None = None) -> nn.Module:
    """A torchvision model for `num_classes` classes, from its spec (+ initial state if pretrained).

    Call after seeding torch: random initialisation follows the global generator.
    """
    kwargs = dict(spec.get("kwargs") or {})
    initial = untrained_model.initial_state(model_dir) if model_dir is not None else None
    if initial is not None:
        model = torchvision.models.get_model(spec["model_name"], weights=None, **kwargs)
        model.load_state_dict(torch.load(initial, map_location="cpu", weights_only=True))
        replace_head(model, num_classes)
        return model
    return torchvision.models.get_model(spec["model_name"], weights=None, num_classes=num_classes, **kwargs)


def classifier_head(model: nn.Module) -> tuple[str, nn.Linear]:
    """The last layer, the one that has an output per class, and its attribute (ResNet: fc,
    DenseNet: classifier)."""
    for attr in ("fc", "classifier"):
        head = getattr(model, attr, None)
        if isinstance(head, nn.Linear):
            return attr, head
    raise ModuleError(f"cannot find the classification layer of {type(model).__name__}")


def replace_head(model: nn.Module, num_classes: int, always: bool = False) -> None:
    """A fresh last layer for our classes, when its size differs (or `always`: other classes).
    Call after seeding torch: its initial weights follow the global generator."""
    attr, head = classifier_head(model)
    if always or head.out_features != num_classes:
        setattr(model, attr, nn.Linear(head.in_features, num_classes))


def write_trained(out: Path, spec: dict, state_dict: dict, info: dict) -> None:
    torch.save(state_dict, model.weights(out))
    model.write(out, **{**spec, **info})


def load_trained(model_input, module_label: str, port_label: str = "Trained model") -> tuple[nn.Module, dict]:
    """The trained model of an input (in eval mode, on CPU) and its model.yaml; a directory that
    is not a trained model is refused naming `module_label` and `port_label`."""
    spec = model.read(model_input, module_label, port_label)
    net = build_model({**spec, "pretrained": False}, len(spec["classes"]))
    net.load_state_dict(torch.load(model.weights(model_input.path), map_location="cpu", weights_only=True))
    net.eval()
    return net, spec
