"""Helpers of the model-side module tests: run one module through the real executor."""
from __future__ import annotations

from pathlib import Path

import pytest

from designer.engine import executor, paths
from sdk.context import InputArtifact
from sdk.formats.meta import artifact


def run(module, node_dir: Path, params: dict | None = None, **inputs) -> tuple[dict[str, InputArtifact], list]:
    """Execute `module` like the engine does; return its outputs as InputArtifacts, and the events."""
    events = []
    outputs = executor.execute(module, {"id": node_dir.name, "kind": module.kind, "parameters": params or {}},
                               inputs, node_dir, events.append)
    return {port: artifact(path) for port, path in outputs.items()}, events


def node_log(node_dir: Path) -> str:
    """The node's log, as its file holds it (the only place log lines are stored)."""
    return paths.log_file(paths.logs_dir(node_dir)).read_text()


def metrics(events) -> list[tuple[str, float, int]]:
    return [(e.data["name"], e.data["value"], e.data["step"]) for e in events if e.type == "metric"]


# --------------------------------------------------------------------------- inputs of the model modules


def image_dir(path: Path, folder: Path, recipe: dict | None = None, mode: str = "training",
              relabel: dict | None = None, unlabeled: bool = False) -> InputArtifact:
    """An ImageDirectory over an ImageFolder tree (as Convert + Apply Image Transformation write it)."""
    import csv

    path.mkdir(parents=True, exist_ok=True)
    items = sorted((str(p), p.parent.name) for p in Path(folder).rglob("*.png"))
    items = [(p, "" if unlabeled else (relabel or {}).get(label, label)) for p, label in items]
    with (path / "index.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["path", "label"])
        w.writerows(items)
    meta = {"classes": sorted({label for _, label in items if label}), "count": len(items), "labeled": not unlabeled}
    if recipe is not None:
        meta["transforms"] = {**recipe, "mode": mode}
    executor.write_meta(path, "ImageDirectory", meta)
    return artifact(path)


def digits_split(root: Path, per_class: int, size: int = 32, classes=None) -> tuple[Path, Path]:
    """Two disjoint ImageFolder trees of digits (3/4 train, 1/4 validation), for `classes` only."""
    import shutil

    from tests.imagesets import digits_folder

    every = digits_folder(root / "all", per_class=per_class, size=size)
    train, val = root / "train", root / "val"
    for class_dir in sorted(every.iterdir()):
        if classes is not None and class_dir.name not in classes:
            continue
        files = sorted(class_dir.glob("*.png"))
        cut = max(1, len(files) * 3 // 4)
        for dest, chosen in ((train, files[:cut]), (val, files[cut:])):
            (dest / class_dir.name).mkdir(parents=True, exist_ok=True)
            for f in chosen:
                shutil.copy(f, dest / class_dir.name / f.name)
    return train, val


def untrained(path: Path, model_name: str = "resnet18") -> InputArtifact:
    from modules.resnet import ResNet

    out, _ = run(ResNet, path, {"model_name": model_name, "pretrained": False})
    return out["untrained_model"]


def small_recipe(size: int = 32, flip: bool = False) -> dict:
    from sdk.formats import transformation as T

    steps = [T.step("resize", size=size)]
    if flip:
        steps.append(T.step("random_horizontal_flip"))
    return T.make_recipe(steps)


@pytest.fixture(scope="module")
def one_thread():
    """Tests run torch on one thread: the test machine's cores are shared, and OpenMP threads
    that spin-wait on busy cores slow a step down tenfold."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
