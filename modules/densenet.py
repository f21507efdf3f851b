from modules._vision_models import missing_weights, write_untrained_model
from sdk.declarations import Bool, Choice, Module, Port, UntrainedModelDirectory

MODEL_NAMES = ("densenet121", "densenet161", "densenet169", "densenet201")


class DenseNet(Module):
    """An untrained DenseNet image classifier (torchvision), optionally with ImageNet weights."""

    kind = "densenet"
    label = "DenseNet"
    category = "Computer Vision / Image Classification"
    outputs = [Port("Untrained model", UntrainedModelDirectory)]
    params = [
        Choice("Model name", default="densenet201", choices=MODEL_NAMES, help="the DenseNet variant"),
        Bool("Pretrained", default=True,
             help="start from ImageNet weights (read from the torch hub cache; never downloaded)"),
        Bool("Memory efficient", default=False,
             help="recompute activations in the backward pass (checkpointing): less memory, slower"),
    ]

    @classmethod
    def preflight(cls, params, machines=None):
        return missing_weights(params, machines, MODEL_NAMES)

    def run(self, ctx):
        write_untrained_model(ctx, self.label, "densenet", {"memory_efficient": ctx.params["memory_efficient"]})
