"""UntrainedModelDirectory: an untrained PyTorch model and its settings (written by ResNet and
DenseNet, read by Train PyTorch Model).

    <dir>/_meta.yaml          type: UntrainedModelDirectory, family, model_name, pretrained
    <dir>/model.yaml          the spec: family, model_name (a torchvision model name),
                              pretrained, weights (their torchvision name, or null),
                              kwargs (constructor options)
    <dir>/initial_state.pt    the pretrained state_dict (torch.save; only when pretrained), so
                              that the directory is self-contained: training never needs the hub

The state files are written and read on the torch side (training/models.py) at these names.
"""
from __future__ import annotations

from pathlib import Path

import yaml

from sdk.errors import InvalidModelDirectoryError, prefixed

SPEC_FILE = "model.yaml"
INITIAL_STATE = "initial_state.pt"
TYPE = "UntrainedModelDirectory"
_PRODUCERS = {TYPE: "ResNet or DenseNet", "ModelDirectory": "Train PyTorch Model"}


def write_spec(out, spec: dict) -> Path:
    """Write model.yaml; returns the folder."""
    out = Path(out)
    (out / SPEC_FILE).write_text(yaml.safe_dump(spec, sort_keys=False))
    return out


def read_spec(model_input, module_label: str, port_label: str, expected_type: str = TYPE) -> dict:
    """The model.yaml of a model directory input (of `expected_type`: this one, or a trained
    ModelDirectory), refusing anything else with an error naming the module and the port."""
    path = Path(model_input.path) if model_input is not None else None
    if path is not None and model_input.type == expected_type and not (path / SPEC_FILE).is_file():
        raise InvalidModelDirectoryError(prefixed(module_label, _without_spec(path, port_label, expected_type)))
    if path is None or model_input.type != expected_type:
        got = "nothing" if path is None else f"{model_input.type or 'a directory without _meta.yaml'} ({path})"
        raise InvalidModelDirectoryError(prefixed(
            module_label, f"the {port_label} must be a {expected_type} (a PyTorch model from "
                          f"{_PRODUCERS.get(expected_type, 'a model module')}), got {got}"))
    spec = yaml.safe_load((path / SPEC_FILE).read_text()) or {}
    if "model_name" not in spec:
        raise InvalidModelDirectoryError(prefixed(module_label, f"{path / SPEC_FILE} names no model_name"))
    return spec


def _without_spec(path: Path, port_label: str, expected_type: str) -> str:
    """Why a folder of the right type is no model: its model.yaml is missing (a script's own
    folder, with the weights only), and what it holds instead."""
    writer = ("sdk.formats.model.write writes it beside the weights, model.pt" if expected_type == "ModelDirectory"
              else f"{_PRODUCERS[expected_type]} write it")
    try:
        names = sorted(p.name for p in path.iterdir())
    except OSError:
        names = []
    held = ", ".join(names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "") if names else "nothing"
    return (f"the {port_label} ({path}) is a {expected_type} without {SPEC_FILE}, the file that names its model "
            f"(model_name), its classes and its transforms ({writer}); the folder holds {held}")


def initial_state(model_dir) -> Path | None:
    """The pretrained state file of an untrained model folder, or None when it starts at random."""
    path = Path(model_dir) / INITIAL_STATE
    return path if path.is_file() else None
