"""What ResNet and DenseNet share: write the UntrainedModelDirectory of a torchvision model
(sdk/formats/untrained_model.py), and say before a run whether its pretrained weights are here.

Plain Python at import time; torch is imported when a module runs. The web process never imports
torch, so the pre-flight check knows the file name of each model's DEFAULT ImageNet weights from
the table below, which tests/modules/test_vision_models.py compares with torchvision's own, and
looks for it on the machines that run modules (modules/_machine.py: each worker's torch hub folder,
as its heartbeat says; this machine's when no worker said).
"""
from __future__ import annotations

from modules._machine import hub_checkpoints, this_machine
from sdk.declarations import Machine
from sdk.errors import ModuleError, labelled

__all__ = ["WEIGHTS_FILES", "hub_checkpoints", "missing_weights", "write_untrained_model"]

# the file of torchvision's DEFAULT (best) ImageNet weights of each model name
WEIGHTS_FILES = {
    "resnet18": "resnet18-f37072fd.pth", "resnet34": "resnet34-b627a593.pth", "resnet50": "resnet50-11ad3fa6.pth",
    "resnet101": "resnet101-cd907fc2.pth", "resnet152": "resnet152-f82ba261.pth",
    "resnext50_32x4d": "resnext50_32x4d-1a0047aa.pth", "resnext101_32x8d": "resnext101_32x8d-110c445d.pth",
    "wide_resnet50_2": "wide_resnet50_2-9ba9bcbe.pth", "wide_resnet101_2": "wide_resnet101_2-d733dc28.pth",
    "densenet121": "densenet121-a639ec97.pth", "densenet161": "densenet161-8d451a50.pth",
    "densenet169": "densenet169-b2777c0a.pth", "densenet201": "densenet201-c1103571.pth",
}


def missing_weights(params: dict, machines: tuple[Machine, ...] | None = None,
                    names: tuple[str, ...] = ()) -> list[tuple[str, str, tuple]]:
    """The pre-flight problem of a pretrained model whose weights file is on none of the machines
    that run modules (a run would fail: weights are never downloaded), as Module.preflight() says
    it, with its one-click ways out: the first of the module's model `names` whose weights are
    there, and unticking Pretrained; [] when fine. `machines`: the live workers' reports, or None
    for this machine."""
    name = WEIGHTS_FILES.get(params.get("model_name"))
    if not params.get("pretrained") or name is None:
        return []
    machines = machines or (this_machine(),)
    if any(name in m.weights for m in machines):
        return []
    here = next((n for n in names if any(WEIGHTS_FILES.get(n) in m.weights for m in machines)), None)
    fixes = ((({"label": f"Use {here} (its weights are there)", "parameters": {"model_name": here}},) if here else ())
             + ({"label": "Untick Pretrained", "parameters": {"pretrained": False}},))
    if len(machines) == 1:
        (m,) = machines
        where = "this machine" if m.name == "this machine" else f"worker {m.name}"
        return [("pretrained", f"the weights {name} are not on {where} ({m.weights_folder}): untick Pretrained, "
                               "or copy the file there", fixes)]
    folders = "; ".join(f"{m.name}: {m.weights_folder}" for m in machines)
    return [("pretrained", f"the weights {name} are on none of the {len(machines)} workers ({folders}): untick "
                           "Pretrained, or copy the file to their torch hub folder", fixes)]


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
