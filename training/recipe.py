"""The recipe's pieces that are not torch plumbing: the best epoch and early stopping, the
learning-rate schedule, the seed and the last partial batch (training/train.py uses them)."""
from __future__ import annotations

import math
import random

import numpy as np
import torch
from torch import nn


class BestEpoch:
    """Keeps a copy of the weights of the epoch with the lowest validation loss, and says when
    `patience` epochs have passed without improvement (early stopping)."""

    def __init__(self, patience: int):
        self.patience = patience
        self.best_loss = math.inf
        self.best_epoch = 0
        self.best_state: dict | None = None
        self.bad_epochs = 0

    def update(self, epoch: int, loss: float, model: nn.Module) -> bool:
        """Record the epoch's validation loss; True when training should stop."""
        if loss < self.best_loss:  # NaN never improves
            self.best_loss, self.best_epoch, self.bad_epochs = loss, epoch, 0
            # on the CPU, in the default memory layout (a GPU's model is channels_last)
            self.best_state = {k: v.detach().cpu().clone(memory_format=torch.contiguous_format)
                               for k, v in model.state_dict().items()}
        else:
            self.bad_epochs += 1
        return self.bad_epochs >= self.patience


def set_seed(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def rng_state() -> dict:
    """Every random generator this process draws from (the sampler's order, augmentations, dropout),
    as a checkpoint keeps them: a resumed training draws what the uninterrupted one would have."""
    state = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def drop_last(images: int, batch_size: int) -> bool:
    """Whether an epoch leaves out its last, partial batch: when it holds fewer than half a batch.
    BatchNorm normalises a step's images by their own statistics: over one image it fails (one
    value per channel), over a few it is noise, and such a step at full learning rate throws the
    training off (the digits, 2 x 1: 674 images a process in batches of 16 left a last step of 2,
    and the validation loss went to 1e15 at epoch 4; 81% against 94% for one process). The
    sampler shuffles every epoch, so no image is left out for good."""
    rest = images % batch_size
    return rest == 1 or 2 * rest < batch_size


def lr_factor(warmup_steps: int, total_steps: int):
    """Linear warm-up from lr / warmup_steps to lr over the first steps, then a cosine decay to 0
    at the last step (torchvision reference: --lr-warmup-method linear --lr-scheduler cosineannealinglr).
    The decay lets the last epochs settle: from scratch, a constant rate leaves the validation
    figures jumping from one epoch to the next."""
    def factor(step: int) -> float:
        if step < warmup_steps:
            return (step + 1) / warmup_steps
        decay_steps = max(1, total_steps - warmup_steps)
        return 0.5 * (1 + math.cos(math.pi * min(1.0, (step - warmup_steps) / decay_steps)))
    return factor
