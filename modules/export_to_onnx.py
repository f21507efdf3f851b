from sdk.declarations import ModelDirectory, Module, OnnxModel, Port
from sdk.formats import onnx_model


class ExportToOnnx(Module):
    """Exports a trained model to ONNX (batch, height and width left free), with its class list and
    preprocessing; the export is checked against PyTorch with onnxruntime before it is kept."""

    kind = "export_to_onnx"
    uses_gpu = True  # at 1 x 1, it holds one of the machine's GPUs while it runs (supervision/gpus.py)
    label = "Export to ONNX"
    category = "Model Scoring & Evaluation"
    inputs = [Port("Trained model", ModelDirectory)]
    outputs = [Port("ONNX model", OnnxModel)]
    params = []

    def run(self, ctx, trained_model):
        from training import models  # noqa: I001 - before torch: see training/__init__.py
        from training import onnx_export

        model, info = models.load_trained(trained_model, self.label)
        example = onnx_export.example_input(info)
        height, width = example.shape[2:]
        ctx.check_cancelled()
        path = onnx_model.model_path(ctx, "onnx_model")
        difference = onnx_export.export(model, path, example, self.label)
        ctx.log(f"exported {info['model_name']} to {path.name} (opset {onnx_export.OPSET}, input 'image' N x 3 x H x W, "
                f"example {height}x{width}); largest difference from PyTorch {difference:.2e}")
        onnx_model.write(ctx, "onnx_model", info, (height, width), onnx_export.OPSET)
