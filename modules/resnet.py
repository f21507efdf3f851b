from modules._vision_models import missing_weights, write_untrained_model
from sdk.declarations import Bool, Choice, Module, Port, UntrainedModelDirectory

MODEL_NAMES = ("resnet18", "resnet34", "resnet50", "resnet101", "resnet152", "resnext50_32x4d",
               "resnext101_32x8d", "wide_resnet50_2", "wide_resnet101_2")


class ResNet(Module):
    """An untrained ResNet image classifier (torchvision), optionally with ImageNet weights."""

    kind = "resnet"
    label = "ResNet"
    category = "Computer Vision / Image Classification"
    outputs = [Port("Untrained model", UntrainedModelDirectory)]
    params = [
        Choice("Model name", default="resnext101_32x8d", choices=MODEL_NAMES, help="the ResNet variant"),
        Bool("Pretrained", default=True,
             help="start from ImageNet weights (read from the torch hub cache; never downloaded)"),
        Bool("Zero init residual", default=False,
             help="zero-initialise the last BatchNorm of each residual branch (each block starts as an identity)"),
    ]

    @classmethod
    def preflight(cls, params, machines=None):
        return missing_weights(params, machines, MODEL_NAMES)

    def run(self, ctx):
        write_untrained_model(ctx, self.label, "resnet", {"zero_init_residual": ctx.params["zero_init_residual"]})
