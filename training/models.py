"""Model directories and torchvision model building.

UntrainedModelDirectory (written by ResNet / DenseNet):
    model.yaml          family, model_name, pretrained, weights, kwargs (constructor options)
    initial_state.pt    the pretrained state_dict (only when Pretrained is on), so that the
                        directory is self-contained: training never needs the hub cache

ModelDirectory (written by Train PyTorch Model):
    model.yaml          the architecture as above + classes, transforms (inference recipe),
                        best_epoch, best validation loss, per-epoch history
    model.pt            the state_dict of the best epoch (head sized for `classes`)
"""
from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlparse

import torch
import torchvision
import yaml
from torch import nn

from modules.base import InvalidModelDirectoryError, ModuleError

SPEC_FILE = "model.yaml"
INITIAL_STATE = "initial_state.pt"
TRAINED_STATE = "model.pt"


class WeightsNotAvailableError(ModuleError):
    """Pretrained weights are not in the torch hub cache (we never download them)."""


# --------------------------------------------------------------------------- pretrained weights


def weights_enum(model_name: str):
    """The torchvision weights the designer uses for `model_name` (the DEFAULT, i.e. best, ones)."""
    return torchvision.models.get_model_weights(model_name).DEFAULT


def cached_weights_path(weights) -> Path:
    """Where torch.hub keeps the file of `weights`: <hub dir>/checkpoints/<file name of the URL>."""
    return Path(torch.hub.get_dir()) / "checkpoints" / os.path.basename(urlparse(weights.url).path)


def build_pretrained(module_label: str, model_name: str, kwargs: dict) -> nn.Module:
    """Build through torchvision's own code (`weights=...`), from the hub cache only."""
    weights = weights_enum(model_name)
    path = cached_weights_path(weights)
    if not path.is_file():
        raise WeightsNotAvailableError(
            f"{module_label}: the pretrained weights of {model_name} ({weights}) are not on this machine: "
            f"put the file {path.name} (from {weights.url}) in the folder {path.parent}, "
            f"or set Pretrained off to start from random weights")
    try:
        return torchvision.models.get_model(model_name, weights=weights, **kwargs)
    except Exception as e:  # a truncated or foreign file: name it
        raise WeightsNotAvailableError(f"{module_label}: cannot load the pretrained weights file {path}: {e}") from e


# --------------------------------------------------------------------------- untrained model directory


def write_untrained(out: Path, spec: dict, initial_state: dict | None = None) -> None:
    out = Path(out)
    (out / SPEC_FILE).write_text(yaml.safe_dump(spec, sort_keys=False))
    if initial_state is not None:
        torch.save(initial_state, out / INITIAL_STATE)


def read_spec(model_input, module_label: str, port_label: str, expected_type: str) -> dict:
    """The model.yaml of a model directory input, refusing anything else with a clear error."""
    path = Path(model_input.path) if model_input is not None else None
    if path is None or model_input.type != expected_type or not (path / SPEC_FILE).is_file():
        got = "nothing" if path is None else f"{model_input.type or 'a directory without _meta.yaml'} ({path})"
        raise InvalidModelDirectoryError(
            f"{module_label}: the {port_label} must be a {expected_type} (a PyTorch model from "
            f"{'ResNet or DenseNet' if expected_type == 'UntrainedModelDirectory' else 'Train PyTorch Model'}), got {got}")
    spec = yaml.safe_load((path / SPEC_FILE).read_text()) or {}
    if "model_name" not in spec:
        raise InvalidModelDirectoryError(f"{module_label}: {path / SPEC_FILE} names no model_name")
    return spec


# --------------------------------------------------------------------------- building


def build_model(spec: dict, num_classes: int, model_dir: Path | None = None) -> nn.Module:
    """A torchvision model for `num_classes` classes, from its spec (+ initial state if pretrained).

    Call after seeding torch: random initialisation follows the global generator.
    """
    kwargs = dict(spec.get("kwargs") or {})
    initial = Path(model_dir) / INITIAL_STATE if model_dir is not None else None
    if initial is not None and initial.is_file():
        model = torchvision.models.get_model(spec["model_name"], weights=None, **kwargs)
        model.load_state_dict(torch.load(initial, map_location="cpu", weights_only=True))
        replace_head(model, num_classes)
        return model
    return torchvision.models.get_model(spec["model_name"], weights=None, num_classes=num_classes, **kwargs)


def replace_head(model: nn.Module, num_classes: int) -> None:
    """A fresh last layer for our classes (ResNet: fc, DenseNet: classifier)."""
    for attr in ("fc", "classifier"):
        head = getattr(model, attr, None)
        if isinstance(head, nn.Linear):
            if head.out_features != num_classes:
                setattr(model, attr, nn.Linear(head.in_features, num_classes))
            return
    raise ModuleError(f"cannot find the classification layer of {type(model).__name__} to size it for {num_classes} classes")


def write_trained(out: Path, spec: dict, state_dict: dict, info: dict) -> None:
    out = Path(out)
    torch.save(state_dict, out / TRAINED_STATE)
    (out / SPEC_FILE).write_text(yaml.safe_dump({**spec, **info}, sort_keys=False))


def load_trained(model_input, module_label: str, port_label: str = "Trained model") -> tuple[nn.Module, dict]:
    """The trained model (in eval mode, on CPU) and its model.yaml."""
    spec = read_spec(model_input, module_label, port_label, "ModelDirectory")
    path = Path(model_input.path)
    if not spec.get("classes") or not (path / TRAINED_STATE).is_file():
        raise InvalidModelDirectoryError(f"{module_label}: the {port_label} ({path}) has no weights ({TRAINED_STATE}) or no class list")
    model = build_model({**spec, "pretrained": False}, len(spec["classes"]))
    model.load_state_dict(torch.load(path / TRAINED_STATE, map_location="cpu", weights_only=True))
    model.eval()
    return model, spec
