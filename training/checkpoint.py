"""Train PyTorch Model's checkpoint: everything a training needs to go on after its process died,
at the end of an epoch or in the middle of one (training/train.py's _Run holds what is saved).

A checkpoint keeps the weights, the optimizer, the schedule, the gradient scaler, the best epoch
and the early-stopping count, the history, and every rank's random generators with the training
sampler's own; in the middle of an epoch also the step, the epoch's sums so far and the generators
as the epoch began. Resumed, an epoch draws its order again, skips the steps done without reading
their images, and goes on with the generators as they were: on CPUs with the same threads, the
training ends bit for bit as it would have. Saved on rank 0 to a temporary file, then renamed.
"""
from __future__ import annotations

import time

import torch

from training import distributed as dist_utils
from training import loading
from training.recipe import drop_last, rng_state, set_rng_state
from training.reporting import EpochSums

CHECK_STEPS = 10  # distributed: how often rank 0 says whether a checkpoint is due (one small broadcast)


def resume(run, path) -> None:
    checkpoint = torch.load(path, map_location="cpu", weights_only=False)
    run.model_without_ddp.load_state_dict(checkpoint["model"])
    run.optimizer.load_state_dict(checkpoint["optimizer"])
    if checkpoint.get("scaler"):
        run.scaler.load_state_dict(checkpoint["scaler"])
    run.lr_scheduler.load_state_dict(checkpoint["lr_scheduler"])
    run.keeper.__dict__.update(checkpoint["best"])
    run.history = checkpoint["history"]
    run.start_epoch = checkpoint["epoch"] + 1
    run.stopped = bool(checkpoint.get("stopped"))
    in_epoch = checkpoint.get("in_epoch")
    if in_epoch is not None:  # saved in the middle of epoch start_epoch: it goes on from that step
        run.in_epoch = {**in_epoch, "epoch_rng": in_epoch["epoch_rng"].get(run.args.rank),
                         "rng": in_epoch["rng"].get(run.args.rank)}
        run.reporter.log(f"resumed from {path} at step {in_epoch['step']} of epoch {in_epoch['epoch']}")
        return
    # this process's generators as they were, with the sampler's, so that the next epoch draws
    # the same order and augmentations as it would have
    rng = checkpoint.get("rng", {}).get(run.args.rank)
    if rng is not None:
        set_rng_state_of(run, rng)
    run.reporter.log(f"resumed from {path} after epoch {checkpoint['epoch']}")


def rng_state_of(run) -> dict:
    """This process's generators, the training sampler's own with them (one process: its
    order; DistributedSampler's follows the seed and the epoch)."""
    generator = getattr(run.train_sampler, "generator", None)
    return {**rng_state(), "sampler": generator.get_state() if generator is not None else None}


def set_rng_state_of(run, state: dict) -> None:
    set_rng_state(state)
    if state.get("sampler") is not None:
        run.train_sampler.generator.set_state(state["sampler"])


def save(run, epoch_done: int, stopped: bool = False, in_epoch: dict | None = None) -> None:
    """The checkpoint (atomic: a temporary file renamed): after `epoch_done` whole epochs, and
    `in_epoch` {epoch, step, sums, epoch_rng} when it is taken in the middle of the next."""
    rng = dist_utils.gather_object(rng_state_of(run))  # every rank's, on rank 0 (every rank calls it)
    if in_epoch is not None:
        in_epoch = {**in_epoch, "rng": dict(enumerate(rng)),
                    "epoch_rng": dict(enumerate(dist_utils.gather_object(in_epoch["epoch_rng"])))}
    if run.checkpoint_path is None:
        return
    run.checkpoint_path.parent.mkdir(parents=True, exist_ok=True)
    dist_utils.save_on_master({"model": run.model_without_ddp.state_dict(),
                               "optimizer": run.optimizer.state_dict(),
                               "lr_scheduler": run.lr_scheduler.state_dict(), "epoch": epoch_done,
                               "scaler": run.scaler.state_dict() if run.scaler.is_enabled() else None,
                               "args": vars(run.args), "best": vars(run.keeper), "history": run.history,
                               "stopped": stopped, "rng": dict(enumerate(rng)) if rng else {},
                               "in_epoch": in_epoch}, run.checkpoint_path)
    run.last_saved = time.monotonic()


def loader_from(run, epoch: int):
    """(the training loader of `epoch`, (steps done, their sums) when a checkpoint in its middle
    is resumed, the generators as the epoch began). Resumed: the epoch's order drawn as it was,
    the steps done skipped without reading their images, then the generators as they were at that step."""
    resumed = run.in_epoch if run.in_epoch is not None and run.in_epoch["epoch"] == epoch else None
    run.in_epoch = None
    if resumed is None:
        return run.train_loader, None, rng_state_of(run)  # (before the loader draws the epoch's order)
    set_rng_state_of(run, resumed["epoch_rng"])
    skip = resumed["step"] * run.args.batch_size
    sampler = loading.Skipping(run.train_sampler, skip, lambda: set_rng_state_of(run, resumed["rng"]))
    loader = loading.loader(run.train_set, run.args, run.device, sampler=sampler,
                            drop_last=drop_last(len(run.train_sampler), run.args.batch_size))
    sums = EpochSums(run.device)
    sums.load(resumed["sums"])
    return loader, (resumed["step"], sums), resumed["epoch_rng"]


def when_due(run, epoch: int, epoch_rng: dict):
    """train_one_epoch's after_step: a checkpoint in the middle of `epoch` once run.interval has
    passed since the last (rank 0's clock decides for every rank, every CHECK_STEPS steps)."""
    def after_step(step: int, sums: EpochSums) -> None:
        due = run.interval > 0 and step < len(run.train_loader) and time.monotonic() - run.last_saved >= run.interval
        if run.args.distributed:
            due = step % CHECK_STEPS == 0 and dist_utils.broadcast_flag(due, run.device)
        if due:
            save(run, epoch - 1, in_epoch={"epoch": epoch, "step": step, "sums": sums.state(), "epoch_rng": epoch_rng})
    return after_step
