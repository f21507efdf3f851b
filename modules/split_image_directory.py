"""Split Image Directory: two image directories, stratified per class, reproducible.

Each class (unlabeled images count as one group) is shuffled with *Random seed* and cut at
round(count x fraction), so that both outputs keep the class proportions; a class of one image
goes to the side the fraction favours. When rounding leaves one output empty, one image moves
over, so that both outputs always hold at least one image. Images are not copied: both indexes
point at the input's images; a recorded transformation is carried over to both outputs.
"""
from __future__ import annotations

import random

from sdk.declarations import Float, ImageDirectory, Int, Module, Port
from sdk.errors import InvalidDatasetError
from sdk.formats import image_directory as imagedir


class SplitImageDirectory(Module):
    """Splits an image directory in two, per class (stratified); the same seed gives the same split."""

    kind = "split_image_directory"
    label = "Split Image Directory"
    category = "Data Transformation"
    inputs = [Port("Image directory", ImageDirectory)]
    outputs = [Port("Results dataset1", ImageDirectory), Port("Results dataset2", ImageDirectory)]
    params = [
        Float("Fraction of images in the first output", 0.9, name="fraction", min=0, max=1, min_exclusive=True,
              max_exclusive=True, help="taken from each class separately (stratified)"),
        Int("Random seed", 0, min=0, max=2**31 - 1, help="the same seed and input give the same split"),
    ]

    def run(self, ctx, image_directory):
        images = imagedir.read(image_directory, self.label, "Image directory")
        if len(images.items) < 2:
            raise InvalidDatasetError(f"{self.label}: the Image directory holds {len(images.items)} image(s): "
                                      "at least 2 are needed to split it in two")
        first, second = split(images.items, ctx.params["fraction"], ctx.params["random_seed"])
        for port, part in (("results_dataset1", first), ("results_dataset2", second)):
            ctx.check_cancelled()
            imagedir.write(ctx, port, part, images.classes, transforms=images.transforms, source_root=images.root)
        ctx.log(f"{len(first)} image(s) in the first output, {len(second)} in the second")
        for c, n in images.class_counts().items():
            k = sum(1 for _, label in first if label == c)
            ctx.log(f"  class {c or '(unlabeled)'}: {k} / {n - k}")


def split(items: list[tuple[str, str]], fraction: float, seed: int):
    rng = random.Random(seed)
    first, second = [], []
    by_label: dict[str, list] = {}
    for item in sorted(items):  # independent of the index order
        by_label.setdefault(item[1], []).append(item)
    for label in sorted(by_label):
        group = by_label[label]
        rng.shuffle(group)
        cut = round(len(group) * fraction)
        first += group[:cut]
        second += group[cut:]
    if not first:
        first.append(second.pop())
    elif not second:
        second.append(first.pop())
    return first, second
