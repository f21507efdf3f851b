"""A trained model to ONNX, checked against PyTorch with ONNX Runtime: what Export to ONNX writes
and what packaging a registered version adds (sdk/formats/onnx_model.py describes the files)."""
from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import torch
from torch import nn

from sdk.errors import ModuleError, prefixed
from sdk.formats import onnx_model
from sdk.formats import transformation as recipes

OPSET = 17
TOLERANCE = 1e-4


def example_input(info: dict) -> torch.Tensor:
    """Two random images of the size the model's inference transform gives a 224 x 224 image (or a
    larger one when the transform crops more than 224 pixels: torchvision would pad)."""
    try:
        width, height = recipes.output_size(info.get("transforms"), recipes.INFERENCE, 224, 224)
    except recipes.RecipeError:
        width, height = recipes.output_size(info.get("transforms"), recipes.INFERENCE, 4096, 4096)
    generator = torch.Generator().manual_seed(0)
    return torch.rand(2, 3, height, width, generator=generator)


def export(model: nn.Module, path: Path, example: torch.Tensor, label: str) -> float:
    """Write `model` to `path` as ONNX (batch, height and width left free; input "image", output
    "logits"); return its largest difference from PyTorch on `example`. ModuleError (naming
    `label`) when it differs by more than TOLERANCE."""
    # The TorchScript-based exporter: the torch.export-based one needs onnxscript, which we do
    # not install; it exports these convolutional networks exactly (checked below). Its own
    # deprecation notices (about itself and the helpers it uses) are silenced for this call only.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.onnx.export(model, (example,), str(path), dynamo=False, opset_version=OPSET,
                          input_names=[onnx_model.INPUT_NAME], output_names=[onnx_model.OUTPUT_NAME],
                          dynamic_axes={onnx_model.INPUT_NAME: {0: "batch", 2: "height", 3: "width"},
                                        onnx_model.OUTPUT_NAME: {0: "batch"}})
    return check_against_torch(model, path, example, label)


def check_against_torch(model: nn.Module, path: Path, images: torch.Tensor, label: str = "Export to ONNX") -> float:
    """Largest absolute difference between PyTorch's and onnxruntime's outputs on `images`."""
    import onnxruntime

    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    with torch.inference_mode():
        expected = model(images).numpy()
    got = session.run(None, {onnx_model.INPUT_NAME: images.numpy()})[0]
    difference = float(np.abs(expected - got).max())
    # float32 keeps about 7 digits: the tolerance scales with the size of the outputs
    tolerance = TOLERANCE * max(1.0, float(np.abs(expected).max()))
    if difference > tolerance:
        raise ModuleError(prefixed(label, f"the exported model's outputs differ from PyTorch's by {difference:.2e} "
                                          f"(more than {tolerance:.1e}) on an example input"))
    return difference
