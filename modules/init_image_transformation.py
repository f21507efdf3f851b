"""Init Image Transformation: a recipe of torchvision.transforms.v2 steps, nothing applied yet.

Output: a TransformationDirectory holding `transform.json` (the recipe, see modules/_transforms.py)
and `_meta.yaml`. Steps run in the order of the parameters below; Apply Image Transformation
in mode "For inference" drops every random step (the Random* ones and Color jitter).
"""
from __future__ import annotations

import json

from modules import _transforms as T
from modules._checks import check_params
from modules.base import Bool, Float, Int, Module, Port, TransformationDirectory

RECIPE_FILE = "transform.json"

# (switch label, default on?, op, {argument: (parameter label, default, type, bounds)})
_STEPS = [
    ("Resize", True, "resize", {"size": ("Size", 256, Int, {"min": 1, "max": 4096})}),
    ("Center crop", True, "center_crop", {"size": ("Crop size", 224, Int, {"min": 1, "max": 4096})}),
    (None, None, "pad", {"padding": ("Pad", 0, Int, {"min": 0, "max": 1024})}),
    ("Color jitter", False, "color_jitter", {
        "brightness": ("Color jitter brightness", 0.4, Float, {"min": 0, "max": 1}),
        "contrast": ("Color jitter contrast", 0.4, Float, {"min": 0, "max": 1}),
        "saturation": ("Color jitter saturation", 0.4, Float, {"min": 0, "max": 1}),
        "hue": ("Color jitter hue", 0.0, Float, {"min": 0, "max": 0.5})}),
    ("Grayscale", False, "grayscale", {}),
    ("Random resized crop", False, "random_resized_crop",
     {"size": ("Random resized crop size", 256, Int, {"min": 1, "max": 4096})}),
    ("Random crop", False, "random_crop", {"size": ("Random crop size", 224, Int, {"min": 1, "max": 4096})}),
    ("Random horizontal flip", True, "random_horizontal_flip", {}),
    ("Random vertical flip", False, "random_vertical_flip", {}),
    ("Random rotation", False, "random_rotation",
     {"degrees": ("Random rotation degrees", 0, Int, {"min": 0, "max": 180})}),
    ("Random affine", False, "random_affine", {"degrees": ("Random affine degrees", 0, Int, {"min": 0, "max": 180})}),
    ("Random grayscale", False, "random_grayscale", {}),
    ("Random perspective", False, "random_perspective", {}),
    ("Random erasing", False, "random_erasing", {}),
]


def _params():
    params = []
    for switch, on, _op, args in _STEPS:
        if switch:
            params.append(Bool(switch, on))
        for label, default, kind, bounds in args.values():
            params.append(kind(label, default, **bounds))
    return params


class InitImageTransformation(Module):
    """A recipe of image transformation steps (torchvision.transforms.v2) for Apply Image
    Transformation. Sizes are in pixels; an int size of Resize sets the shorter side. Pad 0 is off.
    Random steps use torchvision's defaults (probability 0.5; Random grayscale 0.1), editable in
    the recipe file."""

    kind = "init_image_transformation"
    label = "Init Image Transformation"
    category = "Computer Vision / Image Transformation"
    outputs = [Port("Image transformation", TransformationDirectory)]
    params = _params()

    def run(self, ctx):
        check_params(ctx)
        p = ctx.params
        steps = []
        for switch, _on, op, args in _STEPS:
            values = {arg: p[InitImageTransformation._name(label)] for arg, (label, *_rest) in args.items()}
            if op == "pad" and not values["padding"]:
                continue
            if switch and not p[InitImageTransformation._name(switch)]:
                continue
            steps.append(T.step(op, **values))
        recipe = T.make_recipe(steps)
        out = ctx.output_dir("image_transformation")
        (out / RECIPE_FILE).write_text(json.dumps(recipe, indent=2) + "\n")
        ctx.set_meta("image_transformation", recipe=RECIPE_FILE, steps=[s["op"] for s in steps])
        ctx.log("steps: " + (", ".join(s["op"] for s in steps) or "none"))

    @staticmethod
    def _name(label: str) -> str:
        return next(x.name for x in InitImageTransformation.params if x.label == label)
