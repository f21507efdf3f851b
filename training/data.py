"""Image datasets read from ImageDirectory folders, with the transform recorded on them."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import torch
import yaml
from PIL import Image

from modules import _imagedir, _transforms

# ImageNet statistics: what torchvision's pretrained weights expect; harmless from scratch
IMAGENET_NORMALIZE = ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))


def read_image_dir(path, module_label: str = "training", port_label: str = "dataset") -> _imagedir.ImageDir:
    """An ImageDirectory read from its folder alone (what a torchrun process gets: a path)."""
    path = Path(path)
    meta_file = path / "_meta.yaml"
    meta = yaml.safe_load(meta_file.read_text()) if meta_file.exists() else {}
    return _imagedir.read(SimpleNamespace(path=path, type=(meta or {}).get("type", ""), meta=meta or {}),
                          module_label, port_label)


def inference_recipe(recipe: dict | None) -> dict | None:
    """The recipe to score with: the same steps, recorded for inference (random ones dropped)."""
    if recipe is None:
        return None
    return {**recipe, "mode": _transforms.INFERENCE}


class ImageDirDataset(torch.utils.data.Dataset):
    """(image tensor, class index) pairs of an ImageDirectory; unlabeled items get index -1."""

    def __init__(self, image_dir: _imagedir.ImageDir, classes: list[str], transform):
        self.root = image_dir.root
        index = {c: i for i, c in enumerate(classes)}
        self.samples = [(image_dir.abspath(p), index.get(label, -1)) for p, label in image_dir.items]
        self.transform = transform

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, i):
        path, target = self.samples[i]
        with Image.open(path) as img:
            img.load()
            return self.transform(img), target
