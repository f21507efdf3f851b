"""TransformationDirectory: an image transformation recipe (Init Image Transformation writes it;
Apply Image Transformation records it, with a mode, on an ImageDirectory's `transforms`).

    <dir>/_meta.yaml       type: TransformationDirectory, recipe: transform.json, steps: [op, ...]
    <dir>/transform.json   the recipe:

    {"version": 1, "mode": "training",            # mode: only on a recorded recipe
     "steps": [{"op": "resize", "random": false, "size": 256},
               {"op": "center_crop", "random": false, "size": 224},
               {"op": "random_horizontal_flip", "random": true, "p": 0.5}, ...]}

Steps run in the order listed; every step marked `random` is dropped in inference mode, so that
scoring the same image twice gives the same answer. The torchvision transform is built from a
recipe on the torch side (training/transforms.py): a PIL image in, a float32 tensor 3 x H x W
with values in [0, 1] out (then normalised if asked). Here: plain Python only.
"""
from __future__ import annotations

import json

from sdk.errors import InvalidTransformationDirectoryError

RECIPE_FILE = "transform.json"
TYPE = "TransformationDirectory"

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


def inference_recipe(recipe: dict | None) -> dict | None:
    """The recipe to score with: the same steps, recorded for inference (random ones dropped)."""
    if recipe is None:
        return None
    return {**recipe, "mode": INFERENCE}


def read(artifact, module_label: str, port_label: str = "Image transformation") -> dict:
    """The recipe of a TransformationDirectory input; any other directory is refused."""
    if artifact is None:
        raise InvalidTransformationDirectoryError(f"{module_label}: the {port_label} input is not connected")
    path = artifact.path / RECIPE_FILE
    if artifact.type != TYPE or not path.is_file():
        got = artifact.type or "a directory without _meta.yaml"
        raise InvalidTransformationDirectoryError(
            f"{module_label}: the {port_label} input must be a TransformationDirectory "
            f"(from Init Image Transformation), got {got} ({artifact.path})")
    try:
        return check_recipe(json.loads(path.read_text()))
    except (ValueError, RecipeError) as e:
        raise InvalidTransformationDirectoryError(f"{module_label}: {path} is not a usable recipe: {e}") from None


def write(ctx, port: str, recipe: dict) -> None:
    """Write a recipe as a TransformationDirectory output."""
    out = ctx.output_dir(port)
    (out / RECIPE_FILE).write_text(json.dumps(recipe, indent=2) + "\n")
    ctx.set_meta(port, recipe=RECIPE_FILE, steps=[s["op"] for s in recipe["steps"]])
