"""Apply Image Transformation: records a transformation recipe on an image directory.

Images are not materialised: the output's index points at the input's images, and the recipe
(with the mode) is recorded in the output's `_meta.yaml` (`transforms`). Train PyTorch Model and
Score Image Model build the torchvision transform from it (training/transforms.py), so that random steps draw anew at every epoch (a
materialised copy would freeze one random draw) and no disk space is spent on copies.

What is checked here, before any training: the recipe is a real one, and every crop fits every
image (the sizes are read from the image headers). Mode "For inference" drops every random step
(Random* and Color jitter).
"""
from __future__ import annotations

from sdk.declarations import Choice, ImageDirectory, Module, Port, TransformationDirectory
from sdk.errors import InvalidTransformationDirectoryError, NotInRangeValueError
from sdk.formats import image_directory as imagedir
from sdk.formats import transformation as recipes

MODES = ("For training", "For inference")


class ApplyImageTransformation(Module):
    """Applies an image transformation (from Init Image Transformation) to an image directory."""

    kind = "apply_image_transformation"
    label = "Apply Image Transformation"
    category = "Computer Vision / Image Transformation"
    inputs = [Port("Image transformation", TransformationDirectory), Port("Image directory", ImageDirectory)]
    outputs = [Port("Transformed image directory", ImageDirectory)]
    params = [Choice("Mode", "For training", choices=MODES,
                     help="For inference drops every random step (Random* and Color jitter)")]

    def run(self, ctx, image_transformation, image_directory):
        mode = recipes.normalise_mode(ctx.params["mode"])
        recipe = recipes.read(image_transformation, self.label)
        images = imagedir.read(image_directory, self.label, "Image directory")
        if not images.items:
            raise NotInRangeValueError(f"{self.label}: the Image directory holds no image")
        if images.transforms:
            ctx.log("the input already had a transformation recorded: it is replaced by this one")
        sizes = check_sizes(recipe, mode, images, self.label, ctx.check_cancelled)
        recorded = {**recipe, "mode": mode}
        imagedir.write(ctx, "transformed_image_directory", images.items, images.classes, transforms=recorded,
                       source_root=images.root)
        steps = [s["op"] for s in recipes.active_steps(recipe, mode)]
        ctx.log(f"mode {mode}: {', '.join(steps) or 'no step'}; {len(images.items)} image(s), "
                f"output size {', '.join(f'{w}x{h}' for w, h in sorted(sizes))}")


def check_sizes(recipe: dict, mode: str, images, module_label: str, check_cancelled) -> set[tuple[int, int]]:
    """Every crop must fit every image: checked on each distinct image size, from the headers."""
    from PIL import Image, UnidentifiedImageError

    first_of_size: dict[tuple[int, int], str] = {}
    for path, _label in images.items:
        check_cancelled()
        try:
            with Image.open(images.abspath(path)) as img:
                first_of_size.setdefault(img.size, path)
        except (OSError, UnidentifiedImageError) as e:
            raise InvalidTransformationDirectoryError(f"{module_label}: cannot read image {path}: {e}") from None
    out = set()
    for (w, h), path in first_of_size.items():
        try:
            out.add(recipes.output_size(recipe, mode, w, h))
        except recipes.RecipeError as e:
            raise NotInRangeValueError(f"{module_label}: {e}: image {path}. Resize first, or choose a smaller crop "
                                       "in Init Image Transformation") from None
    return out
