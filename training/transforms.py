"""torchvision transforms built from a recipe (sdk/formats/transformation.py describes it).

`build_transform(recipe, mode)`: a PIL image (any mode) in, a float32 tensor 3 x H x W with
values in [0, 1] out (then normalised if asked). Every random step is dropped in inference mode.
"""
from __future__ import annotations

import torch
from torchvision.transforms import v2

from sdk.formats.transformation import RecipeError, active_steps


def build_transform(recipe: dict | None, mode: str | None = None, normalize: tuple | None = None):
    """torchvision.transforms.v2.Compose for `recipe` in `mode` ('For training' / 'For inference',
    or None: the mode recorded on the recipe). PIL image in, float32 tensor 3xHxW in [0, 1] out;
    `normalize=(mean, std)` appends a Normalize. A None recipe gives just the conversion."""
    transforms = [v2.ToImage(), v2.RGB()]
    erasing: list[v2.Transform] = []
    for s in active_steps(recipe, mode):
        t = _torchvision_step(s)
        # erasing works on float tensors only: keep it after the conversion, as torchvision does
        (erasing if s["op"] == "random_erasing" else transforms).append(t)
    transforms.append(v2.ToDtype(torch.float32, scale=True))
    transforms += erasing
    if normalize is not None:
        transforms.append(v2.Normalize(mean=list(normalize[0]), std=list(normalize[1])))
    return v2.Compose(transforms)


def _torchvision_step(s: dict):
    op = s["op"]
    if op == "resize":
        return v2.Resize(s["size"], antialias=True)
    if op == "center_crop":
        return v2.CenterCrop(s["size"])
    if op == "pad":
        return v2.Pad(s["padding"], fill=s.get("fill", 0))
    if op == "color_jitter":
        return v2.ColorJitter(brightness=s["brightness"], contrast=s["contrast"], saturation=s["saturation"], hue=s["hue"])
    if op == "grayscale":
        return v2.Grayscale(num_output_channels=3)
    if op == "random_resized_crop":
        return v2.RandomResizedCrop(s["size"], scale=tuple(s["scale"]), ratio=tuple(s["ratio"]), antialias=True)
    if op == "random_crop":
        return v2.RandomCrop(s["size"])
    if op == "random_horizontal_flip":
        return v2.RandomHorizontalFlip(p=s["p"])
    if op == "random_vertical_flip":
        return v2.RandomVerticalFlip(p=s["p"])
    if op == "random_rotation":
        return v2.RandomRotation(s["degrees"])
    if op == "random_affine":
        translate = s.get("translate")
        scale = s.get("scale")
        return v2.RandomAffine(s["degrees"], translate=tuple(translate) if translate else None,
                               scale=tuple(scale) if scale else None)
    if op == "random_grayscale":
        return v2.RandomGrayscale(p=s["p"])
    if op == "random_perspective":
        return v2.RandomPerspective(distortion_scale=s["distortion_scale"], p=s["p"])
    if op == "random_erasing":
        return v2.RandomErasing(p=s["p"], scale=tuple(s["scale"]), ratio=tuple(s["ratio"]), value=s.get("value", 0))
    raise RecipeError(f"unknown transformation step {op!r}")
