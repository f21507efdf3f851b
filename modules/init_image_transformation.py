"""Init Image Transformation: a recipe of torchvision.transforms.v2 steps, nothing applied yet.

Output: a TransformationDirectory holding the recipe (sdk/formats/transformation.py)
and `_meta.yaml`. Steps run in the order of the parameters below; Apply Image Transformation
in mode "For inference" drops every random step (the Random* ones and Color jitter).
"""
from __future__ import annotations

from sdk.declarations import Bool, Float, Int, Module, Port, TransformationDirectory
from sdk.formats import transformation as recipes

# (switch label, default on?, switch help, op, {argument: (parameter label, default, type, bounds, help)})
_STEPS = [
    ("Resize", True, "Resize every image first (torchvision Resize, antialiased).", "resize",
     {"size": ("Size", 256, Int, {"min": 1, "max": 4096},
               "Pixels of the shorter side after resizing; the aspect ratio is kept.")}),
    ("Center crop", True, "Cut a square from the centre of the image (CenterCrop).", "center_crop",
     {"size": ("Crop size", 224, Int, {"min": 1, "max": 4096},
               "Side of the square in pixels; it must fit in every image (after Resize).")}),
    (None, None, None, "pad",
     {"padding": ("Pad", 0, Int, {"min": 0, "max": 1024},
                  "Pixels of black border added on every side (Pad); 0 adds none.")}),
    ("Color jitter", False, "Randomly change brightness, contrast, saturation and hue (ColorJitter); "
     "training only.", "color_jitter", {
        "brightness": ("Color jitter brightness", 0.4, Float, {"min": 0, "max": 1},
                       "Brightness is scaled by a factor drawn from [1 - value, 1 + value]."),
        "contrast": ("Color jitter contrast", 0.4, Float, {"min": 0, "max": 1},
                     "Contrast is scaled by a factor drawn from [1 - value, 1 + value]."),
        "saturation": ("Color jitter saturation", 0.4, Float, {"min": 0, "max": 1},
                       "Saturation is scaled by a factor drawn from [1 - value, 1 + value]."),
        "hue": ("Color jitter hue", 0.0, Float, {"min": 0, "max": 0.5},
                "Hue is shifted by an amount drawn from [-value, value] (0.5 is half the colour wheel).")}),
    ("Grayscale", False, "Turn every image gray, kept as 3 channels for the model (Grayscale).", "grayscale", {}),
    ("Random resized crop", False, "Crop a random part (8% to 100% of the area, aspect 3/4 to 4/3) and resize "
     "it to a square (RandomResizedCrop); training only.", "random_resized_crop",
     {"size": ("Random resized crop size", 256, Int, {"min": 1, "max": 4096}, "Side of the output square in pixels.")}),
    ("Random crop", False, "Cut a square at a random place (RandomCrop); training only.", "random_crop",
     {"size": ("Random crop size", 224, Int, {"min": 1, "max": 4096},
               "Side of the square in pixels; it must fit in every image.")}),
    ("Random horizontal flip", True, "Mirror left to right with probability 0.5 (RandomHorizontalFlip); "
     "training only.", "random_horizontal_flip", {}),
    ("Random vertical flip", False, "Flip upside down with probability 0.5 (RandomVerticalFlip); training only.",
     "random_vertical_flip", {}),
    ("Random rotation", False, "Rotate by a random angle (RandomRotation); training only.", "random_rotation",
     {"degrees": ("Random rotation degrees", 0, Int, {"min": 0, "max": 180},
                  "The angle is drawn from [-degrees, degrees].")}),
    ("Random affine", False, "Rotate by a random angle keeping the centre (RandomAffine); training only.",
     "random_affine", {"degrees": ("Random affine degrees", 0, Int, {"min": 0, "max": 180},
                                   "The angle is drawn from [-degrees, degrees].")}),
    ("Random grayscale", False, "Turn an image gray with probability 0.1 (RandomGrayscale); training only.",
     "random_grayscale", {}),
    ("Random perspective", False, "Distort the perspective (scale 0.5) with probability 0.5 (RandomPerspective); "
     "training only.", "random_perspective", {}),
    ("Random erasing", False, "Blank a random rectangle with probability 0.5 (RandomErasing, after conversion "
     "to a tensor); training only.", "random_erasing", {}),
]


def _params():
    params = []
    for switch, on, switch_help, _op, args in _STEPS:
        if switch:
            params.append(Bool(switch, on, help=switch_help))
        for label, default, kind, bounds, help_text in args.values():
            params.append(kind(label, default, help=help_text, **bounds))
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
        p = ctx.params
        steps = []
        for switch, _on, _help, op, args in _STEPS:
            values = {arg: p[InitImageTransformation._name(label)] for arg, (label, *_rest) in args.items()}
            if op == "pad" and not values["padding"]:
                continue
            if switch and not p[InitImageTransformation._name(switch)]:
                continue
            steps.append(recipes.step(op, **values))
        recipes.write(ctx, "image_transformation", recipes.make_recipe(steps))
        ctx.log("steps: " + (", ".join(s["op"] for s in steps) or "none"))

    @staticmethod
    def _name(label: str) -> str:
        return next(x.name for x in InitImageTransformation.params if x.label == label)
