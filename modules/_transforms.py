"""Image transformation recipes: the one place that turns a recipe into torchvision transforms.

A recipe is plain JSON, written by Init Image Transformation and recorded on an ImageDirectory
by Apply Image Transformation (`transforms` in its `_meta.yaml`); Train PyTorch Model and Score
Image Model rebuild the transform from it with `build_transform(recipe, mode)`:

    {"version": 1, "mode": "training",            # mode: only on a recorded recipe
     "steps": [{"op": "resize", "random": false, "size": 256},
               {"op": "center_crop", "random": false, "size": 224},
               {"op": "random_horizontal_flip", "random": true, "p": 0.5}, ...]}

Steps run in the order listed; every step marked `random` is dropped in inference mode, so that
scoring the same image twice gives the same answer. The built transform takes a PIL image (any
mode) and returns a float32 tensor, 3 x H x W, values in [0, 1] (then normalised if asked).

torch and torchvision are imported inside the functions: the web process imports this file.
"""
from __future__ import annotations

RECIPE_VERSION = 1
TRAINING, INFERENCE = "training", "inference"
_MODE_ALIASES = {"training": TRAINING, "for training": TRAINING, "inference": INFERENCE, "for inference": INFERENCE}

# op -> (random?, argument defaults); the order of this table is the order Init writes steps in
STEPS: dict[str, tuple[bool, dict]] = {
    "resize": (False, {"size": 256}),
    "center_crop": (False, {"size": 224}),
    "pad": (False, {"padding": 0, "fill": 0}),
    "color_jitter": (True, {"brightness": 0.4, "contrast": 0.4, "saturation": 0.4, "hue": 0.0}),
    "grayscale": (False, {}),
    "random_resized_crop": (True, {"size": 256, "scale": [0.08, 1.0], "ratio": [0.75, 4 / 3]}),
    "random_crop": (True, {"size": 224}),
    "random_horizontal_flip": (True, {"p": 0.5}),
    "random_vertical_flip": (True, {"p": 0.5}),
    "random_rotation": (True, {"degrees": 0}),
    "random_affine": (True, {"degrees": 0, "translate": None, "scale": None}),
    "random_grayscale": (True, {"p": 0.1}),
    "random_perspective": (True, {"distortion_scale": 0.5, "p": 0.5}),
    "random_erasing": (True, {"p": 0.5, "scale": [0.02, 0.33], "ratio": [0.3, 3.3], "value": 0}),
}


class RecipeError(ValueError):
    """A recipe that cannot be read or built; modules turn it into their own error class."""


def step(op: str, **args) -> dict:
    """A recipe step with the defaults of `op` filled in."""
    if op not in STEPS:
        raise RecipeError(f"unknown transformation step {op!r} (known: {', '.join(STEPS)})")
    is_random, defaults = STEPS[op]
    return {"op": op, "random": is_random, **defaults, **args}


def make_recipe(steps: list[dict]) -> dict:
    return {"version": RECIPE_VERSION, "steps": steps}


def normalise_mode(mode: str | None, recipe: dict | None = None) -> str:
    """'For training' / 'training' / None (the mode recorded on the recipe, else training)."""
    if mode is None:
        mode = (recipe or {}).get("mode") or TRAINING
    try:
        return _MODE_ALIASES[str(mode).lower()]
    except KeyError:
        raise RecipeError(f"unknown mode {mode!r}: expected 'For training' or 'For inference'") from None


def check_recipe(recipe) -> dict:
    """Return the recipe if it is one we can build, else raise RecipeError saying why."""
    if not isinstance(recipe, dict) or not isinstance(recipe.get("steps"), list):
        raise RecipeError("not a transformation recipe: expected an object with a list of 'steps'")
    if recipe.get("version", RECIPE_VERSION) > RECIPE_VERSION:
        raise RecipeError(f"recipe version {recipe['version']} is newer than this designer reads ({RECIPE_VERSION})")
    for i, s in enumerate(recipe["steps"]):
        if not isinstance(s, dict) or s.get("op") not in STEPS:
            raise RecipeError(f"step {i + 1} is not a known transformation step: {s!r}")
    return recipe


def active_steps(recipe: dict | None, mode: str | None = None) -> list[dict]:
    """The steps that run in `mode`: inference drops every random step."""
    if not recipe:
        return []
    check_recipe(recipe)
    mode = normalise_mode(mode, recipe)
    return [s for s in recipe["steps"] if mode == TRAINING or not s.get("random", STEPS[s["op"]][0])]


def output_size(recipe: dict | None, mode: str | None, width: int, height: int) -> tuple[int, int]:
    """Size of an image of `width` x `height` after the recipe's geometric steps.

    Raises RecipeError when a crop is larger than the image it receives (torchvision would
    silently pad a center crop and fail deep inside a data loader for a random crop)."""
    w, h = width, height
    for s in active_steps(recipe, mode):
        op = s["op"]
        if op == "resize":
            w, h = _resized(w, h, s["size"])
        elif op in ("center_crop", "random_crop"):
            cw, ch = _pair(s["size"])
            if cw > w or ch > h:
                name = "Crop size" if op == "center_crop" else "Random crop size"
                raise RecipeError(f"{name} {cw}x{ch} is larger than the image, which is {w}x{h} at that step "
                                  f"({width}x{height} before the transformation)")
            w, h = cw, ch
        elif op == "pad":
            w, h = w + 2 * s["padding"], h + 2 * s["padding"]
        elif op == "random_resized_crop":
            w, h = _pair(s["size"])
    return w, h


def _pair(size) -> tuple[int, int]:
    """torchvision's convention: an int is a square; a pair is (height, width)."""
    if isinstance(size, (list, tuple)):
        return int(size[1]), int(size[0])
    return int(size), int(size)


def _resized(w: int, h: int, size) -> tuple[int, int]:
    """As torchvision's Resize: an int sets the shorter side and keeps the aspect ratio."""
    if isinstance(size, (list, tuple)):
        return _pair(size)
    short, long = (w, h) if w <= h else (h, w)
    new_short, new_long = int(size), int(size * long / short)
    return (new_short, new_long) if w <= h else (new_long, new_short)


def build_transform(recipe: dict | None, mode: str | None = None, normalize: tuple | None = None):
    """torchvision.transforms.v2.Compose for `recipe` in `mode` ('For training' / 'For inference',
    or None: the mode recorded on the recipe). PIL image in, float32 tensor 3xHxW in [0, 1] out;
    `normalize=(mean, std)` appends a Normalize. A None recipe gives just the conversion."""
    import torch
    from torchvision.transforms import v2

    transforms = [v2.ToImage(), v2.RGB()]
    erasing = []
    for s in active_steps(recipe, mode):
        t = _torchvision_step(v2, s)
        # erasing works on float tensors only: keep it after the conversion, as torchvision does
        (erasing if s["op"] == "random_erasing" else transforms).append(t)
    transforms.append(v2.ToDtype(torch.float32, scale=True))
    transforms += erasing
    if normalize is not None:
        transforms.append(v2.Normalize(mean=list(normalize[0]), std=list(normalize[1])))
    return v2.Compose(transforms)


def _torchvision_step(v2, s: dict):
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
