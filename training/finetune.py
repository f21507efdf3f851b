"""Fine-tuning and transfer learning (training/train.py uses them).

A training starts from an untrained model (ResNet / DenseNet: random or pretrained weights), or
from a trained one (a ModelDirectory: Train PyTorch Model's output, or a registered model): its
trained weights are the start, and its classifier head is kept when the training dataset has the
same classes, or replaced by a fresh one for other classes. "Freeze backbone" trains only the
head: the rest of the model is a fixed feature extractor (the PyTorch transfer-learning
tutorial, "ConvNet as fixed feature extractor").
"""
from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from sdk.errors import InvalidModelDirectoryError
from sdk.formats import model as model_format
from training import models

__all__ = ["start_model", "fine_tuned_from", "freeze_backbone", "train_mode"]


def class_text(classes: list) -> str:
    """'a, b, c', or '0, 1, 2, 3, ..., 99' for a long list."""
    names = [str(c) for c in classes]
    return ", ".join(names) if len(names) <= 8 else f"{', '.join(names[:4])}, ..., {names[-1]}"


def start_model(spec: dict, classes: list[str], model_dir: Path) -> tuple[nn.Module, str | None]:
    """The model a training starts from, sized for `classes`, and for a trained model the log line
    saying what happens to its classifier head (None for an untrained model).

    Call after seeding torch: random initial weights (a new head included) follow the global generator."""
    if not spec.get("classes"):  # an untrained model's spec has no classes
        return models.build_model(spec, len(classes), model_dir), None
    trained = [str(c) for c in spec["classes"]]
    net = models.build_model({**spec, "pretrained": False}, len(trained))
    path = model_format.weights(model_dir)
    try:
        net.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
    except Exception as e:  # a foreign or truncated file: name it
        raise InvalidModelDirectoryError(
            f"the weights of the trained model ({path}) do not load into {spec['model_name']} with "
            f"{len(trained)} classes: {' '.join(str(e).split())}") from e
    attr, head = models.classifier_head(net)
    start = f"fine-tuning {spec['model_name']} trained on {len(trained)} classes ({class_text(trained)})"
    if classes == trained:
        return net, f"{start}: the classifier head ({attr}) is kept, the training dataset has the same classes"
    if sorted(classes) == sorted(trained):  # the same classes in another order: the head's rows follow them
        order = torch.tensor([trained.index(c) for c in classes])
        with torch.no_grad():
            head.weight.copy_(head.weight[order])
            head.bias.copy_(head.bias[order])
        return net, (f"{start}: the classifier head ({attr}) is kept, its outputs put in the order of the training "
                     f"dataset's classes ({class_text(classes)})")
    models.replace_head(net, len(classes), always=True)
    return net, (f"{start}: the classifier head ({attr}) is replaced for {len(classes)} classes "
                 f"({class_text(classes)}), from random weights; the rest of the model starts from the trained weights")


# what the _meta.yaml of a Registered model's output (modules/registered_model.py) says of its origin
REGISTERED = ("registered_model", "registered_version")


def fine_tuned_from(spec: dict, meta: dict | None = None) -> dict | None:
    """What model.yaml records of the trained model a training started from (None: it did not):
    its architecture and classes, and its registered name and version when it came from the registry."""
    if not spec.get("classes"):
        return None
    registered = {k: v for k in REGISTERED if (v := (meta or {}).get(k)) is not None}
    return {"model_name": spec["model_name"], "classes": [str(c) for c in spec["classes"]], **registered}


def freeze_backbone(model: nn.Module, spec: dict) -> str:
    """Only the classifier head's parameters require grad; returns the log line that says so."""
    attr, head = models.classifier_head(model)
    for p in model.parameters():
        p.requires_grad_(False)
    for p in head.parameters():
        p.requires_grad_(True)
    trained = sum(p.numel() for p in head.parameters())
    total = sum(p.numel() for p in model.parameters())
    line = (f"Freeze backbone: training the classifier head ({attr}) only, {trained:,} of {total:,} parameters; "
            "the backbone's weights and batch-norm statistics stay as they start")
    if not spec.get("classes") and not spec.get("pretrained"):
        line += " (random weights here: a pretrained or trained model gives the head better features to learn from)"
    return line


def train_mode(model: nn.Module) -> None:
    """model.train(), except the batch-norm layers of a frozen backbone: they keep normalising with
    the statistics they start with (a fixed feature extractor), instead of drifting to the new data."""
    model.train()
    for m in model.modules():
        own = list(m.parameters(recurse=False))
        if isinstance(m, nn.modules.batchnorm._BatchNorm) and own and not any(p.requires_grad for p in own):
            m.eval()
