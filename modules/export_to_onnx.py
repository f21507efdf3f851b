import warnings

from sdk.declarations import ModelDirectory, Module, OnnxModel, Port
from sdk.errors import ModuleError
from sdk.formats import onnx_model
from sdk.formats import transformation as recipes

OPSET = 17
TOLERANCE = 1e-4


class ExportToOnnx(Module):
    """Exports a trained model to ONNX (batch, height and width left free), with its class list and
    preprocessing; the export is checked against PyTorch with onnxruntime before it is kept."""

    kind = "export_to_onnx"
    label = "Export to ONNX"
    category = "Model Scoring & Evaluation"
    inputs = [Port("Trained model", ModelDirectory)]
    outputs = [Port("ONNX model", OnnxModel)]
    params = []

    def run(self, ctx, trained_model):
        from training import models  # noqa: I001 - before torch: see training/__init__.py

        import torch

        model, info = models.load_trained(trained_model, self.label)
        width, height = recipes.output_size(info.get("transforms"), recipes.INFERENCE, 224, 224)
        ctx.check_cancelled()
        torch.manual_seed(0)
        example = torch.rand(2, 3, height, width)
        path = onnx_model.model_path(ctx, "onnx_model")
        # The TorchScript-based exporter: the torch.export-based one needs onnxscript, which we do
        # not install; it exports these convolutional networks exactly (checked below). Its own
        # deprecation notices (about itself and the helpers it uses) are silenced for this call only.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            torch.onnx.export(model, (example,), str(path), dynamo=False, opset_version=OPSET,
                              input_names=[onnx_model.INPUT_NAME], output_names=[onnx_model.OUTPUT_NAME],
                              dynamic_axes={onnx_model.INPUT_NAME: {0: "batch", 2: "height", 3: "width"},
                                            onnx_model.OUTPUT_NAME: {0: "batch"}})
        difference = check_against_torch(model, path, example)
        ctx.log(f"exported {info['model_name']} to {path.name} (opset {OPSET}, input 'image' N x 3 x H x W, "
                f"example {height}x{width}); largest difference from PyTorch {difference:.2e}")
        onnx_model.write(ctx, "onnx_model", info, (height, width), OPSET)


def check_against_torch(model, path, images) -> float:
    """Largest absolute difference between PyTorch's and onnxruntime's outputs on `images`."""
    import numpy as np
    import onnxruntime
    import torch

    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    with torch.inference_mode():
        expected = model(images).numpy()
    got = session.run(None, {onnx_model.INPUT_NAME: images.numpy()})[0]
    difference = float(np.abs(expected - got).max())
    # float32 keeps about 7 digits: the tolerance scales with the size of the outputs
    tolerance = TOLERANCE * max(1.0, float(np.abs(expected).max()))
    if difference > tolerance:
        raise ModuleError(f"Export to ONNX: the exported model's outputs differ from PyTorch's by {difference:.2e} "
                          f"(more than {tolerance:.1e}) on an example input")
    return difference
