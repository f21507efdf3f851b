"""A recipe's geometry done once per batch on the GPU, not once per image in the loading processes.

The per-image steps of most training and inference recipes are geometry: Resize, Center crop,
Random crop, Random resized crop, then flips. Together they map the output square to one box of the
decoded image. So the loading processes only decode each image and draw the recipe's random numbers
(`CropPlan`: a box and the flips, the same draws torchvision makes), and the GPU crops, resizes and
flips the whole batch at once (`BatchCrop`: one `torchvision.ops.roi_align`, bilinear with several
samples per output pixel where it shrinks, so antialiased like torchvision's Resize). The resize was
most of a loading process's work: on the ImageNet recipe (320 x 256 JPEGs to 224 px, one core of
the development machine) an image took 1.93 ms decoded by Pillow, transformed and batched, and
1.03 ms decoded by torchvision, drawn and batched.

An image the box cannot do as the recipe says (a crop larger than the image, which the recipe's own
steps pad or refuse) or whose pixels would crowd the loader's queues (over MAX_PIXELS_PER_OUTPUT
times the output's) gets the recipe's own steps in its loading process and a box of its whole output.
The result differs from the host path by how the two resamplers round and filter: measured in
tests/training/test_crops.py and bench/gpu_checks.py.
"""
from __future__ import annotations

import math
import warnings
from pathlib import Path

import torch
from PIL import Image
from torchvision import transforms as v1
from torchvision.io import ImageReadMode, decode_image
from torchvision.transforms import v2

from training.data import ImageDirDataset

# an image of more pixels than this times the output's is transformed in its loading process: a
# batch is padded to its largest image, and its pixels travel through shared memory and to the GPU
MAX_PIXELS_PER_OUTPUT = 4
_CONVERSIONS = (v2.ToImage, v2.RGB)
_FLIPS = (v2.RandomHorizontalFlip, v2.RandomVerticalFlip)


def _bilinear(t) -> bool:  # an InterpolationMode, or its value as torchvision 0.29 keeps it
    return getattr(t.interpolation, "value", t.interpolation) == "bilinear"


def _resize_ok(t) -> bool:
    return _bilinear(t) and t.antialias is not False and t.max_size is None and len(t.size) in (1, 2)


def _supported(t) -> bool:
    if isinstance(t, v2.Resize):
        return _resize_ok(t)
    if isinstance(t, v2.RandomResizedCrop):
        return _bilinear(t) and t.antialias is not False
    if isinstance(t, v2.RandomCrop):
        return t.padding is None and not t.pad_if_needed
    return isinstance(t, v2.CenterCrop)


class CropPlan:
    """The per-image part, run where the image is decoded: a uint8 3 x H x W image in, (the image,
    its row) out, the row being (top, left, bottom, right, horizontal flip, vertical flip) of the
    box in the image's pixels; `collate` makes the batch `BatchCrop` finishes on the device."""

    def __init__(self, steps: list, size: tuple[int, int]):
        self.steps, self.size = steps, size
        self.whole = v2.Compose(steps)  # the recipe's own steps, for an image the box cannot do

    @classmethod
    def of(cls, steps: list) -> CropPlan | None:
        """The plan of a recipe's per-image steps, or None where they are not geometry then flips
        ending in a fixed size (a Resize of the shorter side alone gives images of many sizes)."""
        body = [t for t in steps if not isinstance(t, _CONVERSIONS)]
        flips = 0
        while flips < len(body) and isinstance(body[len(body) - 1 - flips], _FLIPS):
            flips += 1
        geometry = body[:len(body) - flips]
        if not geometry or not all(_supported(t) for t in geometry):
            return None
        last = geometry[-1]
        if isinstance(last, v2.Resize) and len(last.size) != 2:
            return None
        return cls(steps, (int(last.size[0]), int(last.size[-1])))

    def box(self, height: int, width: int) -> list[float] | None:
        """(top, left, bottom, right, hflip, vflip) for an image of this size, drawing the recipe's
        random numbers; None where the recipe's own steps must run (a crop larger than the image)."""
        top = left = 0.0
        sy = sx = 1.0  # pixels of the image per pixel of the current step's output
        h, w = height, width
        hflip = vflip = 0.0
        for t in self.steps:
            if isinstance(t, _CONVERSIONS):
                continue
            if isinstance(t, v2.Resize):
                nh, nw = _resized(t.size, h, w)
                sy, sx, h, w = sy * h / nh, sx * w / nw, nh, nw
                continue
            if isinstance(t, _FLIPS):
                drawn = float(torch.rand(1).item() < t.p)
                hflip, vflip = (hflip + drawn, vflip) if isinstance(t, v2.RandomHorizontalFlip) else (hflip, vflip + drawn)
                continue
            ch, cw = int(t.size[0]), int(t.size[-1])
            if isinstance(t, v2.RandomResizedCrop):
                i, j, bh, bw = v1.RandomResizedCrop.get_params(torch.empty(1, 1, 1).expand(1, h, w), t.scale, t.ratio)
                top, left, sy, sx = top + i * sy, left + j * sx, sy * bh / ch, sx * bw / cw
            elif ch > h or cw > w:
                return None
            elif isinstance(t, v2.CenterCrop):
                top, left = top + int(round((h - ch) / 2.0)) * sy, left + int(round((w - cw) / 2.0)) * sx
            else:  # RandomCrop
                top = top + int(torch.randint(0, h - ch + 1, (1,))) * sy
                left = left + int(torch.randint(0, w - cw + 1, (1,))) * sx
            h, w = ch, cw
        return [top, left, top + h * sy, left + w * sx, hflip % 2, vflip % 2]

    def __call__(self, image: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        height, width = image.shape[-2:]
        row = self.box(height, width) if height * width <= MAX_PIXELS_PER_OUTPUT * self.size[0] * self.size[1] else None
        if row is None:
            image = self.whole(image).as_subclass(torch.Tensor)
            row = [0.0, 0.0, float(self.size[0]), float(self.size[1]), 0.0, 0.0]
        return image, torch.tensor(row, dtype=torch.float32)

    @staticmethod
    def collate(items: list[tuple[torch.Tensor, torch.Tensor]]) -> tuple[torch.Tensor, torch.Tensor]:
        """(the images as one N x H x W x 3 batch, each padded to the largest by repeating its last
        row and column; their rows). Height, width, channels: the order the decoders write, so each
        image is one plain copy (a copy to channels first was 60% of the time here). In a loading
        process the batch goes straight into shared memory, as torch's default_collate does."""
        height = max(image.shape[-2] for image, _ in items)
        width = max(image.shape[-1] for image, _ in items)
        shape = (len(items), height, width, 3)
        device = items[0][0].device
        if torch.utils.data.get_worker_info() is not None and device.type == "cpu":
            storage = torch.UntypedStorage._new_shared(math.prod(shape))
            batch = torch.empty(0, dtype=torch.uint8).set_(storage).view(shape)
        else:
            batch = torch.empty(shape, dtype=torch.uint8, device=device)
        for k, (image, _) in enumerate(items):
            h, w = image.shape[-2:]
            pixels = image.permute(1, 2, 0)
            batch[k, :h, :w] = pixels
            batch[k, :h, w:] = pixels[:, w - 1:w]
            batch[k, h:, :] = batch[k, h - 1:h, :]
        return batch, torch.stack([row for _, row in items])


def _resized(size: list[int], h: int, w: int) -> tuple[int, int]:
    """The size torchvision's Resize gives (its rule for one number: the shorter side)."""
    if len(size) == 2:
        return int(size[0]), int(size[1])
    short, long = (w, h) if w <= h else (h, w)
    new_short, new_long = int(size[0]), int(size[0] * long / short)
    return (new_long, new_short) if w <= h else (new_short, new_long)


class BatchCrop:
    """The device part: (padded uint8 images, N x H x W x 3; rows) in, the recipe's batch out
    (`then`, the recipe's conversion to float and its Normalize, run on it)."""

    def __init__(self, plan: CropPlan, then: v2.Compose):
        self.size, self.then = plan.size, then

    def __call__(self, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        from torchvision.ops import roi_align  # imports torch._dynamo: only where a batch is cropped

        images, rows = batch
        index = torch.arange(len(rows), device=rows.device, dtype=rows.dtype).unsqueeze(1)
        boxes = torch.cat([index, rows[:, [1, 0, 3, 2]]], dim=1)  # (k, x1, y1, x2, y2)
        with torch.no_grad():
            images = images.permute(0, 3, 1, 2).float().contiguous()
            out = roi_align(images, boxes, self.size, spatial_scale=1.0, sampling_ratio=-1, aligned=True)
            out = torch.where(rows[:, 4].bool().view(-1, 1, 1, 1), out.flip(-1), out)
            out = torch.where(rows[:, 5].bool().view(-1, 1, 1, 1), out.flip(-2), out)
            out = out.round_().clamp_(0, 255).to(torch.uint8)
        return self.then(out)


class DecodedImageDataset(ImageDirDataset):
    """(image decoded to uint8 by torchvision, or by Pillow for what it cannot read, then the plan's
    box, class index) of each image of an ImageDirectory."""

    def __getitem__(self, i):
        path, target = self.samples[i]
        return self.transform(decode(path)), target


def file_bytes(path) -> torch.Tensor:
    """A file's bytes as a uint8 tensor, what torchvision's decoders read."""
    return torch.frombuffer(bytearray(Path(path).read_bytes()), dtype=torch.uint8)


def decode(path) -> torch.Tensor:
    """An image file as a uint8 RGB 3 x H x W tensor: libjpeg-turbo or libpng through torchvision
    (no PIL image to convert: 0.40 ms against 0.70 for a 320 x 256 JPEG), Pillow for the rest."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # torchvision 0.29 points to TorchCodec
            image = decode_image(file_bytes(path), mode=ImageReadMode.RGB)
        if image.dtype == torch.uint8 and image.shape[0] == 3:
            return image
    except RuntimeError:
        pass
    with Image.open(path) as img:
        return v2.functional.pil_to_tensor(img.convert("RGB"))
