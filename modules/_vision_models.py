"""What ResNet and DenseNet share: write the UntrainedModelDirectory of a torchvision model
(sdk/formats/untrained_model.py).

Plain Python at import time; torch is imported when a module runs.
"""
from __future__ import annotations

from sdk.errors import ModuleError, labelled


def write_untrained_model(ctx, module_label: str, family: str, kwargs: dict) -> None:
    from training import models

    name = ctx.params["model_name"]
    pretrained = ctx.params["pretrained"]
    spec = {"family": family, "model_name": name, "pretrained": pretrained, "weights": None, "kwargs": kwargs}
    initial_state = None
    if pretrained:
        weights = models.weights_enum(name)
        try:
            model = models.build_pretrained(name, kwargs)
        except ModuleError as e:
            raise labelled(e, module_label) from e.__cause__
        initial_state = model.state_dict()
        spec["weights"] = str(weights)
        ctx.log(f"loaded the pretrained weights {weights} from {models.cached_weights_path(weights)}")
    ctx.check_cancelled()
    out = ctx.output_dir("untrained_model")
    models.write_untrained(out, spec, initial_state)
    ctx.set_meta("untrained_model", family=family, model_name=name, pretrained=pretrained)
    ctx.log(f"{name}: {'pretrained (ImageNet)' if pretrained else 'random initial weights'}, options {kwargs}")
