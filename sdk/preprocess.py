"""Image bytes in, the model's input out, with nothing but the standard library, numpy and PIL.

This file is copied as it is into every downloaded model archive (beside predict.py) and is what
the scoring endpoints use, so it imports nothing of the project.

    load_image(data)                  bytes -> RGB PIL image, converted as Convert to Image
                                      Directory converted the training images; BadImage otherwise
    Preprocessor(preprocessing)(img)  PIL image -> float32 array 3 x H x W, the same numbers (within
                                      1e-6) as training/transforms.build_transform(recipe, INFERENCE,
                                      normalize) gives with torchvision on the same image

`preprocessing` is the dict of preprocessing.json (sdk/formats/onnx_model.py): "transforms" (the
recipe, sdk/formats/transformation.py) and "normalize" ([mean, std] or null).

torchvision converts the PIL image to a uint8 tensor first, so every step below works on uint8
pixels as torch does: Resize is torch's antialiased bilinear uint8 kernel (int16 fixed-point
weights, a horizontal pass then a vertical one, each rounded to uint8), not PIL's resize, which
differs by one level on some pixels.
"""
from __future__ import annotations

import io
import math
import threading
import warnings
from collections.abc import Callable

import numpy as np
from PIL import Image, ImageOps

MB = 1024 * 1024
MAX_IMAGE_BYTES = 10 * MB  # of one encoded image
MAX_PIXELS = 40_000_000  # of one decoded image: 120 MB as 8-bit RGB

# the steps of a recipe dropped in inference mode unless marked otherwise ("random": false)
RANDOM_STEPS = frozenset({
    "color_jitter", "random_resized_crop", "random_crop", "random_horizontal_flip", "random_vertical_flip",
    "random_rotation", "random_affine", "random_grayscale", "random_perspective", "random_erasing"})
SUPPORTED_STEPS = ("resize", "center_crop", "pad", "grayscale")
RECIPE_VERSION = 1

# warnings.catch_warnings changes process-wide state: one image opens at a time under it
_OPENING = threading.Lock()


class BadImage(ValueError):
    """An image that cannot be scored; `status` is the HTTP status to answer (400, or 413 when too big)."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


def load_image(data: bytes, max_bytes: int = MAX_IMAGE_BYTES, max_pixels: int = MAX_PIXELS) -> Image.Image:
    """The RGB image in `data`, converted as the training images were; BadImage saying why not."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise BadImage(f"not an image: expected bytes, got {type(data).__name__}")
    size = len(data)
    if size > max_bytes:
        raise BadImage(f"the image is {_megabytes(size)}, the limit is {_megabytes(max_bytes)}", 413)
    if size == 0:
        raise BadImage("not an image: it is empty")
    try:
        with _OPENING, warnings.catch_warnings():
            # PIL warns (then fails) at open on huge images: both are our 413, and no warning leaks.
            # Only the opening holds the lock: decoding, the slow part, runs on many threads at once.
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            img = Image.open(io.BytesIO(data))
        with img:
            _check_pixels(img, max_pixels)
            img.load()
            return to_rgb(ImageOps.exif_transpose(img))
    except BadImage:
        raise
    except (Image.DecompressionBombWarning, Image.DecompressionBombError):
        assert Image.MAX_IMAGE_PIXELS is not None  # PIL checks for bombs only when it has a limit
        raise BadImage(f"the image declares more than the {Image.MAX_IMAGE_PIXELS / 1e6:.0f} megapixels PIL opens safely, "
                       f"the limit is {max_pixels / 1e6:g} megapixels", 413) from None
    except Image.UnidentifiedImageError:
        raise BadImage(f"not an image: {_megabytes(size)} in no image format known here") from None
    except Exception as e:  # any decoder failure is the sender's broken file
        why = "truncated" if "truncated" in str(e) or isinstance(e, EOFError) else "corrupt"
        raise BadImage(f"the image is {why}: it cannot be decoded ({e or type(e).__name__})") from None


def image_size(data: bytes) -> tuple[int, int]:
    """(width, height) as the image's header declares them, read without decoding a pixel;
    BadImage when it is no image (or declares more than PIL opens at all)."""
    try:
        with _OPENING, warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)  # the caller judges the size
            with Image.open(io.BytesIO(data)) as img:
                return img.size
    except Image.DecompressionBombError:
        assert Image.MAX_IMAGE_PIXELS is not None  # PIL checks for bombs only when it has a limit
        raise BadImage(f"the image declares more than the {2 * Image.MAX_IMAGE_PIXELS / 1e6:.0f} megapixels PIL opens "
                       "at all", 413) from None
    except Image.UnidentifiedImageError:
        raise BadImage(f"not an image: {_megabytes(len(data))} in no image format known here") from None
    except Exception as e:  # a header the decoder chokes on
        raise BadImage(f"the image is corrupt: its header cannot be read ({e or type(e).__name__})") from None


def _check_pixels(img: Image.Image, max_pixels: int) -> None:
    width, height = img.size
    if width * height > max_pixels:
        raise BadImage(f"the image is {width} x {height} pixels ({width * height / 1e6:.1f} megapixels), "
                       f"the limit is {max_pixels / 1e6:g} megapixels", 413)


def _megabytes(n: int) -> str:
    return f"{n / MB:.1f} MB" if n % MB else f"{n // MB} MB"


def to_rgb(img: Image.Image) -> Image.Image:
    """8-bit RGB as Convert to Image Directory stores training images: 16-bit and float gray scaled
    to 0..255, transparency composited on white, anything else through PIL's convert("RGB")."""
    if img.mode.startswith("I") or img.mode == "F":
        arr = np.asarray(img, dtype=np.float32)  # exact for 16-bit values
        scale = 1.0 if img.mode == "F" else 257.0
        img = Image.fromarray(np.clip(np.rint(arr / scale), 0, 255).astype(np.uint8), mode="L")
    if img.mode in ("RGBA", "LA", "PA", "RGBa", "La") or (img.mode == "P" and "transparency" in img.info):
        rgba = img.convert("RGBA")
        background = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(background, rgba).convert("RGB")
    return img.convert("RGB")


class Preprocessor:
    """The inference transform of a model: `Preprocessor(preprocessing)(image)` -> float32 3 x H x W.

    Raises ValueError at construction for a recipe it cannot reproduce, naming the step."""

    def __init__(self, preprocessing: dict):
        if not isinstance(preprocessing, dict):
            raise ValueError(f"preprocessing must be the object of preprocessing.json, got {type(preprocessing).__name__}")
        self.steps = [_checked(i, s) for i, s in _inference_steps(preprocessing.get("transforms"))]
        self.mean: np.ndarray | None = None
        self.std: np.ndarray | None = None
        normalize = preprocessing.get("normalize")
        if normalize is not None:
            try:
                mean, std = (np.asarray(v, dtype=np.float32).reshape(-1, 1, 1) for v in normalize)
            except (TypeError, ValueError):
                raise ValueError(f"normalize must be [mean, std], got {normalize!r}") from None
            if mean.shape[0] not in (1, 3) or std.shape[0] not in (1, 3) or not np.all(std != 0):
                raise ValueError(f"normalize must be [mean, std] of 1 or 3 values, std not 0; got {normalize!r}")
            self.mean, self.std = mean, std

    def __call__(self, image: Image.Image) -> np.ndarray:
        pixels = _rgb_pixels(image)
        for op, args in self.steps:
            pixels = _APPLY[op](pixels, **args)
        out = np.ascontiguousarray(pixels.transpose(2, 0, 1)).astype(np.float32)
        out *= np.float32(1.0 / 255)  # torchvision's ToDtype(float32, scale=True)
        if self.mean is not None and self.std is not None:  # both or neither
            out = (out - self.mean) / self.std
        return out

    def batch(self, images) -> np.ndarray:
        """N x 3 x H x W of images that come out of the same size (else ValueError naming the sizes)."""
        arrays = [self(img) for img in images]
        shapes = sorted({a.shape[1:] for a in arrays})
        if len(shapes) > 1:
            raise ValueError(f"the images come out of the transform in different sizes {shapes}: score them one by one")
        return np.stack(arrays)


def _inference_steps(recipe) -> list[tuple[int, dict]]:
    """(position, step) of the steps that run in inference mode: random ones are dropped."""
    if recipe is None:
        return []
    if not isinstance(recipe, dict) or not isinstance(recipe.get("steps"), list):
        raise ValueError("transforms must be a recipe: an object with a list of 'steps'")
    if recipe.get("version", RECIPE_VERSION) > RECIPE_VERSION:
        raise ValueError(f"recipe version {recipe['version']} is newer than this file reads ({RECIPE_VERSION})")
    kept = []
    for i, s in enumerate(recipe["steps"], 1):
        if not isinstance(s, dict) or not isinstance(s.get("op"), str):
            raise ValueError(f"step {i} of the recipe is not a transformation step: {s!r}")
        if not s.get("random", s["op"] in RANDOM_STEPS):
            kept.append((i, s))
    return kept


def _checked(i: int, s: dict) -> tuple[str, dict]:
    """(op, arguments) of a step this file reproduces; ValueError naming the step otherwise."""
    op = s["op"]
    name = f"step {i} ({op!r})"
    if op not in SUPPORTED_STEPS:
        raise ValueError(f"{name} runs at inference and cannot be reproduced without torchvision "
                         f"(reproduced: {', '.join(SUPPORTED_STEPS)})")
    try:
        if op == "resize":
            return op, {"size": _size(s["size"], 2)}
        if op == "center_crop":
            return op, {"size": _size(s["size"], 2, square=True)}
        if op == "pad":
            return op, {"ltrb": _padding(s["padding"]), "fill": _fill(s.get("fill", 0))}
        return op, {}
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError(f"{name} has arguments that cannot be reproduced: {e}") from None


def _size(size, most: int, square: bool = False):
    """An int, or a list of 1 or 2 positive ints ([height, width]) as torchvision takes them."""
    values = [size] if isinstance(size, int) and not isinstance(size, bool) else list(size)
    if not 1 <= len(values) <= most or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in values):
        raise ValueError(f"size {size!r} is not a positive int or a list of 1 or 2 of them")
    if len(values) == 1:
        return (values[0], values[0]) if square else values[0]
    return tuple(values)


def _padding(padding) -> tuple[int, int, int, int]:
    values = [padding] if isinstance(padding, int) else list(padding)
    if len(values) not in (1, 2, 4) or not all(isinstance(v, int) and v >= 0 for v in values):
        raise ValueError(f"padding {padding!r} is not an int >= 0 or a list of 1, 2 or 4 of them")
    if len(values) == 1:
        return (values[0],) * 4
    if len(values) == 2:
        return values[0], values[1], values[0], values[1]
    return values[0], values[1], values[2], values[3]


def _fill(fill) -> np.ndarray:
    values = [fill] if isinstance(fill, (int, float)) else list(fill)
    if len(values) not in (1, 3) or not all(isinstance(v, (int, float)) and v == int(v) and 0 <= v <= 255 for v in values):
        raise ValueError(f"fill {fill!r} is not a whole number from 0 to 255, or 3 of them")
    return np.array([int(v) for v in values] * (3 // len(values)), dtype=np.uint8)


# ---------------------------------------------------------------- the steps, on H x W x 3 uint8


def _rgb_pixels(image: Image.Image) -> np.ndarray:
    """H x W x 3 uint8: an L image repeated on 3 channels as torchvision's RGB() does; other modes
    converted as the training images were (to_rgb)."""
    if image.mode == "L":
        gray = np.asarray(image)
        return np.repeat(gray[:, :, None], 3, axis=2)
    if image.mode != "RGB":
        image = to_rgb(image)
    return np.asarray(image)


def _resize(pixels: np.ndarray, size) -> np.ndarray:
    height, width = pixels.shape[:2]
    if isinstance(size, int):  # the shorter side, as torchvision computes it
        short, long = (width, height) if width <= height else (height, width)
        new_short, new_long = size, int(size * long / short)
        new_width, new_height = (new_short, new_long) if width <= height else (new_long, new_short)
    else:
        new_height, new_width = size
    if new_width != width:
        pixels = _resample(pixels, new_width, axis=1)
    if new_height != height:
        pixels = _resample(pixels, new_height, axis=0)
    return pixels


def _resample(pixels: np.ndarray, out_size: int, axis: int) -> np.ndarray:
    """One pass of torch's uint8 antialiased bilinear resize along `axis`
    (aten/src/ATen/native/cpu/UpSampleKernel.cpp, _compute_index_ranges_int16_weights)."""
    starts, weights, precision = _int16_weights(pixels.shape[axis], out_size)
    acc = np.full(pixels.shape[:axis] + (out_size,) + pixels.shape[axis + 1:], 1 << (precision - 1), dtype=np.int32)
    last = pixels.shape[axis] - 1
    shape = (-1, 1, 1) if axis == 0 else (1, -1, 1)
    for j in range(weights.shape[1]):
        taps = np.take(pixels, np.minimum(starts + j, last), axis=axis).astype(np.int32)
        acc += taps * weights[:, j].reshape(shape)
    return np.clip(acc >> precision, 0, 255).astype(np.uint8)


def _int16_weights(in_size: int, out_size: int) -> tuple[np.ndarray, np.ndarray, int]:
    """(first source index per output, int16 weights [out, taps] (0 past the source), precision)."""
    scale = in_size / out_size
    support = scale if scale >= 1.0 else 1.0  # bilinear: interp_size 2, times 0.5
    taps = int(math.ceil(support)) * 2 + 1
    invscale = 1.0 / scale if scale >= 1.0 else 1.0
    center = scale * (np.arange(out_size) + 0.5)
    starts = np.maximum(np.trunc(center - support + 0.5).astype(np.int64), 0)
    stops = np.minimum(np.trunc(center + support + 0.5).astype(np.int64), in_size)
    sizes = np.clip(stops - starts, 0, taps)
    j = np.arange(taps)
    x = np.abs(((j[None, :] + starts[:, None]).astype(np.float64) - center[:, None] + 0.5) * invscale)
    w = np.where((x < 1.0) & (j[None, :] < sizes[:, None]), 1.0 - x, 0.0)
    total = np.zeros(out_size)
    for k in range(taps):  # summed in order, as the C++ loop does
        total = total + w[:, k]
    w = np.where(total[:, None] != 0.0, w / np.where(total == 0.0, 1.0, total)[:, None], w)
    wt_max = float(w.max()) if w.size else 0.0
    precision = 0
    while precision < 22 and int(0.5 + wt_max * (1 << (precision + 1))) < (1 << 15):
        precision += 1
    return starts, np.trunc(0.5 + w * (1 << precision)).astype(np.int32), precision


def _center_crop(pixels: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    crop_h, crop_w = size
    height, width = pixels.shape[:2]
    if crop_h > height or crop_w > width:  # torchvision pads with 0 first
        left, top = max(crop_w - width, 0) // 2, max(crop_h - height, 0) // 2
        right, bottom = max(crop_w - width + 1, 0) // 2, max(crop_h - height + 1, 0) // 2
        pixels = np.pad(pixels, ((top, bottom), (left, right), (0, 0)))
        height, width = pixels.shape[:2]
    top, left = int(round((height - crop_h) / 2.0)), int(round((width - crop_w) / 2.0))
    return pixels[top:top + crop_h, left:left + crop_w]


def _pad(pixels: np.ndarray, ltrb: tuple[int, int, int, int], fill: np.ndarray) -> np.ndarray:
    left, top, right, bottom = ltrb
    height, width = pixels.shape[:2]
    out = np.empty((height + top + bottom, width + left + right, 3), dtype=np.uint8)
    out[:] = fill
    out[top:top + height, left:left + width] = pixels
    return out


def _grayscale(pixels: np.ndarray) -> np.ndarray:
    """torchvision's rgb_to_grayscale on uint8: float32 r * 0.2989, then two fused multiply-adds
    (g * 0.587, b * 0.114; exact in float64, rounded once to float32), truncated to uint8.
    A band of rows at a time: float64 copies of a whole 40-megapixel image would take gigabytes."""
    c1, c2, c3 = (float(np.float32(c)) for c in (0.2989, 0.587, 0.114))
    out = np.empty(pixels.shape[:2], dtype=np.uint8)
    for top in range(0, pixels.shape[0], _BAND):
        r, g, b = (pixels[top:top + _BAND, :, i].astype(np.float64) for i in range(3))
        level = (r * c1).astype(np.float32).astype(np.float64)
        level = (level + g * c2).astype(np.float32).astype(np.float64)
        out[top:top + _BAND] = (level + b * c3).astype(np.float32).astype(np.uint8)
    return np.repeat(out[:, :, None], 3, axis=2)


_BAND = 256
_APPLY: dict[str, Callable[..., np.ndarray]] = {"resize": _resize, "center_crop": _center_crop, "pad": _pad, "grayscale": _grayscale}
