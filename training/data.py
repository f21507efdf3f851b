"""Image datasets read from ImageDirectory folders (sdk/formats/image_directory.py)."""
from __future__ import annotations

import torch
from PIL import Image

from sdk.formats.image_directory import ImageDir

# ImageNet statistics: what torchvision's pretrained weights expect; harmless from scratch
IMAGENET_NORMALIZE = ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))


class ImageDirDataset(torch.utils.data.Dataset):
    """(image tensor, class index) pairs of an ImageDirectory; unlabeled items get index -1."""

    device_transform = None  # what the training device applies to a batch (training/loading.dataset)

    def __init__(self, image_dir: ImageDir, classes: list[str], transform):
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
