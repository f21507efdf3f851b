"""OnnxModel: a trained model exported to ONNX (written by Export to ONNX; what a scoring
endpoint or any ONNX Runtime user loads).

    <dir>/_meta.yaml          type: OnnxModel, file, classes, model_name, opset
    <dir>/model.onnx          input "image" (N x 3 x H x W, float32, normalised), output "logits" (N x classes)
    <dir>/preprocessing.json  {"classes": [...], "transforms": {...} (the inference recipe,
                               transformation.py), "normalize": [mean, std], "input": "image",
                               "output": "logits", "example_size": [height, width]}
"""
from __future__ import annotations

import json
from pathlib import Path

from sdk.errors import InvalidModelDirectoryError, prefixed

ONNX_FILE = "model.onnx"
PREPROCESSING_FILE = "preprocessing.json"
INPUT_NAME = "image"
OUTPUT_NAME = "logits"
TYPE = "OnnxModel"


def model_path(ctx, port: str) -> Path:
    """Where the writer's exporter puts the ONNX graph (then `write` adds the rest)."""
    return ctx.output_dir(port) / ONNX_FILE


def write(ctx, port: str, info: dict, example_size: tuple[int, int], opset: int) -> Path:
    """Complete an OnnxModel output whose model.onnx is written: its preprocessing and meta.
    `info` is the trained model's model.yaml (classes, transforms, normalize, model_name)."""
    out = ctx.output_dir(port)
    write_preprocessing(out, info, example_size)
    ctx.set_meta(port, file=ONNX_FILE, classes=info["classes"], model_name=info.get("model_name"), opset=opset)
    return out


def write_preprocessing(folder: Path, info: dict, example_size: tuple[int, int]) -> Path:
    """preprocessing.json beside a model.onnx (here, and in a registered version's folder)."""
    preprocessing = {"classes": info["classes"], "transforms": info.get("transforms"),
                     "normalize": info.get("normalize"), "input": INPUT_NAME, "output": OUTPUT_NAME,
                     "example_size": list(example_size)}
    path = Path(folder) / PREPROCESSING_FILE
    path.write_text(json.dumps(preprocessing, indent=1))
    return path


def read(artifact, module_label: str, port_label: str = "ONNX model") -> tuple[Path, dict]:
    """(path of model.onnx, preprocessing) of an OnnxModel input; anything else is refused."""
    path = Path(artifact.path)
    if artifact.type != TYPE or not (path / ONNX_FILE).is_file() or not (path / PREPROCESSING_FILE).is_file():
        got = artifact.type or "a directory without _meta.yaml"
        raise InvalidModelDirectoryError(prefixed(
            module_label, f"the {port_label} must be an OnnxModel ({ONNX_FILE} and {PREPROCESSING_FILE}), got {got} ({path})"))
    return path / ONNX_FILE, json.loads((path / PREPROCESSING_FILE).read_text())
