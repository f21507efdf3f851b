"""Data and inputs for the GPU bench and checks (bench/train_gpu.py, bench/gpu_checks.py), made
with what a GPU machine has (torch, torchvision, Pillow, numpy, PyYAML; no Django): JPEG photos
of generated scenes, ImageDirectory folders over them (the files Convert + Apply Image
Transformation write), and the untrained model of the ResNet module."""
from __future__ import annotations

import csv
import os
import re
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _scene(args) -> None:
    """One photo-like JPEG: a smooth two-colour gradient per class, with random blobs and noise
    (a few tens of KB, like a phone photo scaled down: what a 224 px training decodes)."""
    path, label, seed, width, height = args
    from PIL import Image, ImageDraw, ImageFilter

    rng = np.random.default_rng(seed)
    base = np.array([(label * 37) % 256, (label * 91) % 256, (label * 53) % 256], dtype=np.float32)
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float32)
    grad = (xx / width)[..., None] * base + (yy / height)[..., None] * (255 - base)
    img = np.clip(grad * 0.7 + rng.normal(0, 12, (height, width, 3)), 0, 255).astype(np.uint8)
    im = Image.fromarray(img)
    draw = ImageDraw.Draw(im)
    for _ in range(6):
        x, y = rng.integers(0, width), rng.integers(0, height)
        r = rng.integers(10, max(11, width // 4))
        draw.ellipse((x - r, y - r, x + r, y + r), fill=tuple(int(c) for c in rng.integers(0, 256, 3)))
    im = im.filter(ImageFilter.GaussianBlur(1))
    path.parent.mkdir(parents=True, exist_ok=True)
    im.save(path, "JPEG", quality=90)


def make_jpegs(folder: Path, images: int, classes: int = 10, size=(320, 256), seed: int = 0) -> Path:
    """An ImageFolder tree of `images` JPEGs (classes sub-folders), made in parallel; kept if there."""
    folder = Path(folder)
    done = folder / ".complete"
    if done.exists() and int(done.read_text()) == images:
        return folder
    jobs = [(folder / f"c{i % classes}" / f"{i:06d}.jpg", i % classes, seed * 1_000_003 + i, *size)
            for i in range(images)]
    with ProcessPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        list(pool.map(_scene, jobs, chunksize=64))
    done.write_text(str(images))
    return folder


def image_directory(path: Path, folder: Path, recipe: dict, mode: str):
    """An ImageDirectory (index.csv + _meta.yaml) over the images of an ImageFolder tree."""
    from designer.engine import executor
    from sdk.formats.meta import artifact

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    items = sorted((str(p), p.parent.name) for p in Path(folder).rglob("*") if p.suffix.lower() in (".jpg", ".png"))
    with (path / "index.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["path", "label"])
        w.writerows(items)
    executor.write_meta(path, "ImageDirectory", {"classes": sorted({label for _, label in items}), "count": len(items),
                                                 "labeled": True, "transforms": {**recipe, "mode": mode}})
    return artifact(path)


def imagenet_recipes(size: int = 224) -> tuple[dict, dict]:
    """(training, validation) recipes of the ImageNet reference, as Init Image Transformation
    records them: random resized crop + flip; resize + centre crop."""
    from sdk.formats import transformation as T

    return (T.make_recipe([T.step("random_resized_crop", size=size), T.step("random_horizontal_flip")]),
            T.make_recipe([T.step("resize", size=size * 256 // 224), T.step("center_crop", size=size)]))


def untrained(path: Path, model_name: str):
    from designer.engine import executor
    from modules.resnet import ResNet
    from sdk.formats.meta import artifact

    outputs = executor.execute(ResNet, {"id": "resnet", "kind": ResNet.kind,
                                        "parameters": {"model_name": model_name, "pretrained": False}},
                               {}, Path(path), lambda e: None)
    return artifact(outputs["untrained_model"])


def train_node(node_dir: Path, params: dict, model, train, val) -> tuple[dict, list]:
    """Train PyTorch Model through the engine's executor (what a worker runs at 1 x 1)."""
    from designer.engine import executor
    from modules.train_pytorch_model import TrainPyTorchModel
    from sdk.formats.meta import artifact

    events: list = []
    outputs = executor.execute(TrainPyTorchModel, {"id": Path(node_dir).name, "kind": TrainPyTorchModel.kind,
                                                   "parameters": params},
                               {"untrained_model": model, "training_dataset": train, "validation_dataset": val},
                               Path(node_dir), events.append)
    return {port: artifact(p) for port, p in outputs.items()}, events


def log_text(node_dir: Path) -> str:
    """The node's log (its log files, read as the Log pane reads them), without the time stamps."""
    from designer.engine import paths

    files = sorted(paths.logs_dir(Path(node_dir)).rglob("*.txt"))
    lines = [line for f in files for line in f.read_text(encoding="utf-8").splitlines()]
    return "\n".join(re.sub(r"^\d\d:\d\d:\d\d ", "", line) for line in lines)
