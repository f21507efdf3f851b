"""Image classification training, after torchvision's classification reference
(references/classification/train.py): `load_data`, `train_one_epoch`, `evaluate`, `main(args)`.

One process: `main(args)` in-process (what the designer's training module does for Run settings 1 x 1).
Several: the same `main(args)` under `torchrun`, which sets RANK / WORLD_SIZE / LOCAL_RANK:

    torchrun --nproc-per-node 2 -m training.train --model-dir M --train-dir T --val-dir V --output-dir O

Recipe: SGD with Nesterov momentum 0.9 and weight decay 1e-4, a linear learning-rate warm-up
over the first `--warmup-steps` steps, early stopping when the validation loss has not improved
for `--patience` epochs. The output keeps the BEST epoch's weights (lowest validation loss), not
the last. `--batch-size` is per process, as in the torchvision reference.

`--model-dir` may also be a trained ModelDirectory: the training fine-tunes it (training/finetune.py);
`--freeze-backbone` trains the classifier head alone.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import torch
from torch import nn

from sdk.errors import InvalidDatasetError, ModuleError, NotInRangeValueError, labelled
from sdk.formats import image_directory, metrics
from sdk.formats import model as model_format
from sdk.formats.meta import artifact
from sdk.formats.transformation import INFERENCE, RecipeError, inference_recipe
from training import checkpoint, devices, finetune, loading, models
from training import distributed as dist_utils
from training.data import IMAGENET_NORMALIZE
from training.recipe import BestEpoch, drop_last, lr_factor, set_seed
from training.reporting import EpochSums, Reporter, report_epoch
from training.transforms import build_transform

__all__ = ["main", "get_args_parser", "load_data", "train_one_epoch", "evaluate", "BestEpoch", "drop_last", "lr_factor",
           "set_seed", "Reporter", "TrainingDivergedError"]

CHECKPOINT = "checkpoint.pth"


class TrainingDivergedError(ModuleError):
    """The loss became NaN or infinite."""


class GPUOutOfMemoryError(ModuleError):
    """The GPU had not the memory a step needs."""


class DeviceError(ModuleError):
    """CUDA or NCCL failed: the message names the rank, the worker and the GPU."""


# --------------------------------------------------------------------------- data


def load_data(args):
    """Training and validation datasets and samplers; refuses unusable input with clear errors."""
    train_dir = image_directory.read_path(args.train_dir, "", "Training dataset")
    val_dir = image_directory.read_path(args.val_dir, "", "Validation dataset")
    for image_dir, port in ((train_dir, "Training dataset"), (val_dir, "Validation dataset")):
        if not image_dir.items:
            raise InvalidDatasetError(f"the {port} has no images")
    train_dir.require_labels("", "Training dataset")
    val_dir.require_labels("", "Validation dataset")
    classes = [c for c in train_dir.classes if train_dir.class_counts().get(c)] or train_dir.classes
    missing = sorted({label for _, label in val_dir.items} - set(classes))
    if missing:
        raise InvalidDatasetError(f"the Validation dataset has classes that are not among the training "
                                  f"classes: {', '.join(missing[:10])}{' ...' if len(missing) > 10 else ''}")
    per_process = len(train_dir.items) // args.world_size
    if args.batch_size > per_process:
        raise NotInRangeValueError(
            f"Batch size {args.batch_size} is larger than the training dataset "
            f"({len(train_dir.items)} images{f' over {args.world_size} processes' if args.world_size > 1 else ''}); "
            f"lower Batch size to at most {max(per_process, 1)}")
    args.decode_on_device = loading.decode_on_device(args.decode, device := torch.device(args.device), args.workers, train_dir, val_dir)
    recipe = train_dir.transforms
    try:
        train_tf = build_transform(recipe, None, IMAGENET_NORMALIZE)
        val_tf = build_transform(val_dir.transforms or inference_recipe(recipe), INFERENCE, IMAGENET_NORMALIZE)
    except RecipeError as e:
        raise InvalidDatasetError(f"the recorded image transformation cannot be used: {e}") from e
    train_set = loading.dataset(train_dir, classes, train_tf, args.decode_on_device, device)
    val_set = loading.dataset(val_dir, classes, val_tf, args.decode_on_device, device)
    if args.distributed:
        train_sampler: torch.utils.data.Sampler = torch.utils.data.distributed.DistributedSampler(train_set, shuffle=True, seed=args.seed)
        val_sampler: torch.utils.data.Sampler = dist_utils.ShardSampler(val_set, args.rank, args.world_size)
    else:
        generator = torch.Generator().manual_seed(args.seed)
        train_sampler = torch.utils.data.RandomSampler(train_set, generator=generator)
        val_sampler = torch.utils.data.SequentialSampler(val_set)
    return train_set, val_set, train_sampler, val_sampler, classes, recipe


# --------------------------------------------------------------------------- one epoch


def train_one_epoch(model, criterion, optimizer, data_loader, device, epoch, args, lr_scheduler, reporter,
                    scaler=None, resumed: tuple[int, EpochSums] | None = None, after_step=None):
    """One pass over the training data; returns the epoch's figures (summed over processes).

    Nothing waits for the device inside a step: the loss, error and image counts are summed on the
    device and read once per print (Print frequency) and at the end of the epoch, where a loss that
    stopped being a number is also noticed, naming the step it first happened at.

    `resumed`: (steps done, their sums) of an epoch that a checkpoint in its middle goes on from
    (`data_loader` then yields the steps left); `after_step(step, sums)`: called after each step
    (a checkpoint when one is due)."""
    finetune.train_mode(model)  # a frozen backbone's batch-norm layers stay in evaluation mode
    device = torch.device(device)
    done, sums = resumed if resumed is not None else (0, EpochSums(device))
    steps = done + len(data_loader)
    started = time.perf_counter()
    seen_before = sums.seen  # (images per second: this attempt's own)
    scaler = scaler or devices.grad_scaler("off", device)
    for i, (images, targets) in enumerate(loading.device_batches(data_loader, device, args), start=done):
        with devices.autocast(getattr(args, "amp", "off"), device):
            output = _forward(model, images, args)
            loss = criterion(output, targets)
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        lr_scheduler.step()
        sums.add_step(i + 1, loss, output, targets)
        if args.print_freq and (i + 1) % args.print_freq == 0:
            loss_value = _checked(sums, epoch, steps, args)
            rate = (sums.seen - seen_before) / (time.perf_counter() - started)
            reporter.log(f"Epoch: [{epoch}] [{i + 1}/{steps}]  lr: {optimizer.param_groups[0]['lr']:.6f}  "
                         f"loss: {loss_value:.4f}  img/s: {rate:.1f}")
        reporter.check_cancelled()
        if after_step is not None:
            after_step(i + 1, sums)
    _checked(sums, epoch, steps, args)
    elapsed = time.perf_counter() - started
    loss_sum, errors, seen, own = dist_utils.reduce_sum([sums.loss, sums.errors, float(sums.seen),
                                                         float(sums.seen - seen_before)], device)
    return {"learning_rate": optimizer.param_groups[0]["lr"], "training_images_per_second": own / max(elapsed, 1e-9),
            "training_loss": loss_sum / seen, "training_error": errors / seen,
            "training_top1_accuracy": 1 - errors / seen}


def _checked(sums: EpochSums, epoch: int, steps: int, args) -> float:
    """The last step's loss; TrainingDivergedError when a loss of the epoch was not a number."""
    last, first_bad, bad_value = sums.read()
    if first_bad:
        raise TrainingDivergedError(
            f"the training loss became {bad_value} at epoch {epoch}, step {first_bad} of {steps}; "
            f"lower the Learning rate (now {args.lr:g}) or raise the Warmup step number")
    return last


def _forward(model, images, args):
    try:
        return model(images)
    except ValueError as e:
        if "Expected more than 1 value per channel" not in str(e):
            raise
        raise NotInRangeValueError(
            f"Batch size {args.batch_size} is too small for images this size: BatchNorm needs more than "
            f"one value per channel in a training step ({e}); raise Batch size, or the image size in Init Image "
            "Transformation") from None


def evaluate(model, criterion, data_loader, device, num_classes: int, args=None) -> dict:
    """Validation loss and top-1 / top-5 accuracy (summed over processes: exact, no padding); the
    sums stay on the device until the end."""
    model.eval()
    device = torch.device(device)
    sums = torch.zeros(3, dtype=torch.float64, device=device)  # loss, top-1, top-5 (images: counted here)
    seen = 0
    k = min(5, num_classes)
    amp = getattr(args, "amp", "off")
    with torch.inference_mode():
        for images, targets in loading.device_batches(data_loader, device, args):
            with devices.autocast(amp, device):
                output = model(images)
            output = output.float()
            hits = output.topk(k, dim=1).indices == targets[:, None]
            sums += torch.stack([criterion(output, targets).double() * targets.shape[0], hits[:, 0].sum().double(),
                                 hits.any(dim=1).sum().double()])
            seen += targets.shape[0]
    loss_sum, correct1, correct5, total = dist_utils.reduce_sum([*sums.tolist(), float(seen)], device)
    result = {"validation_loss": loss_sum / total, "validation_top1_accuracy": correct1 / total}
    if num_classes >= 5:
        result["validation_top5_accuracy"] = correct5 / total
    return result


# --------------------------------------------------------------------------- main


def main(args, reporter: Reporter | None = None) -> dict:
    """Train; write the ModelDirectory to args.output_dir (rank 0); return a summary. A refused
    input raises a ModuleError whose message starts with `args.label` when one is given."""
    output_dir = Path(args.output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    reporter = reporter or Reporter(output_dir / metrics.METRICS_FILE, args.stop_file or None)
    try:
        dist_utils.init_distributed_mode(args)
        return _train(args, reporter, output_dir)
    except ModuleError as e:
        raise labelled(e, args.label) from None
    except torch.OutOfMemoryError as e:  # a GPU's; the CPU's is the kernel's OOM killer
        raise labelled(GPUOutOfMemoryError(devices.out_of_memory_message(torch.device(args.device), args.batch_size,
                                                                         args.amp)), args.label) from e
    except RuntimeError as e:
        if not devices.is_device_error(e):
            raise
        raise labelled(DeviceError(devices.device_error_message(e, args)), args.label) from e
    finally:
        dist_utils.cleanup()
        devices.release(args)


def _report_device(args, device, reporter: Reporter, decode: str) -> None:
    """Every process says in its own driver log which device it trains on (and records it for the node pane: --devices-dir)."""
    line = (f"rank {args.rank}: {devices.describe(device)}; mixed precision {args.amp}; "
            f"{args.workers} data-loading process(es); {decode}")
    reporter.log_own(line)
    if args.devices_dir:
        devices.record(Path(args.devices_dir), args.rank, device, line)


class _Run:
    """What one training holds: the model (with and without its DistributedDataParallel wrapper),
    the loaders, the optimiser and its schedule, the best epoch so far and the history."""

    def __init__(self, args, spec: dict, data, device, reporter: Reporter):
        self.args, self.device, self.reporter = args, device, reporter
        self.train_set, self.val_set, self.train_sampler, val_sampler, self.classes, self.recipe = data
        self.model, self.model_without_ddp = _build_model(args, spec, self.classes, device, reporter)
        set_seed(args.seed + args.rank)  # augmentations differ per rank
        self.train_loader = loading.loader(self.train_set, args, device, sampler=self.train_sampler,
                                           drop_last=drop_last(len(self.train_sampler), args.batch_size))
        self.val_loader = loading.loader(self.val_set, args, device, sampler=val_sampler, validation=True)
        self.criterion = nn.CrossEntropyLoss()
        self.scaler = devices.grad_scaler(args.amp, device)
        trainable = [p for p in self.model.parameters() if p.requires_grad]  # the head alone when frozen
        self.optimizer = torch.optim.SGD(trainable, lr=args.lr, momentum=args.momentum, nesterov=True,
                                         weight_decay=args.weight_decay)
        self.lr_scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, lr_factor(args.warmup_steps, args.epochs * len(self.train_loader)))
        self.keeper = BestEpoch(args.patience)
        self.history: list[dict] = []
        self.start_epoch = 1
        self.stopped = False  # (a resumed training whose last epoch was early stopping's)
        self.checkpoint_path = Path(args.work_dir) / CHECKPOINT if args.work_dir else None
        # a checkpoint in the middle of an epoch every this many seconds (0: at each epoch's end only)
        self.interval = max(0.0, float(getattr(args, "checkpoint_minutes", 0) or 0)) * 60
        self.last_saved = time.monotonic()
        self.in_epoch: dict | None = None  # the middle of an epoch that a resumed training goes on from

    def epoch(self, epoch: int) -> bool:
        """Train and validate one epoch; True when early stopping says to stop."""
        args = self.args
        if args.distributed:
            self.train_sampler.set_epoch(epoch)
        loader, resumed, epoch_rng = checkpoint.loader_from(self, epoch)
        figures = train_one_epoch(self.model, self.criterion, self.optimizer, loader, self.device, epoch,
                                  args, self.lr_scheduler, self.reporter, self.scaler, resumed,
                                  checkpoint.when_due(self, epoch, epoch_rng))
        # the model that is kept is rank 0's: its batch-norm statistics on every rank (each rank
        # updated them with its own last batch), so that every shard is scored by that one model
        dist_utils.broadcast_buffers(self.model_without_ddp)
        figures.update(evaluate(self.model_without_ddp, self.criterion, self.val_loader, self.device, len(self.classes),
                                args))
        report_epoch(self.reporter, epoch, args.epochs, figures)
        self.history.append({"epoch": epoch, **figures})
        stop = self.keeper.update(epoch, figures["validation_loss"], self.model_without_ddp)
        checkpoint.save(self, epoch, stopped=stop)
        return stop

    def summary(self) -> dict:
        """What model.yaml records beside the spec: classes, transforms, the best epoch's figures."""
        keeper = self.keeper
        if keeper.best_state is None:
            raise TrainingDivergedError(f"the validation loss was never a number (NaN); "
                                        f"lower the Learning rate (now {self.args.lr:g})")
        best = next(h for h in self.history if h["epoch"] == keeper.best_epoch)
        return {"classes": self.classes, "transforms": inference_recipe(self.recipe),
                "normalize": [list(v) for v in IMAGENET_NORMALIZE], "best_epoch": keeper.best_epoch,
                "epochs_run": self.history[-1]["epoch"], "validation_loss": best["validation_loss"],
                "validation_top1_accuracy": best["validation_top1_accuracy"], "history": self.history}


def _build_model(args, spec: dict, classes: list[str], device, reporter: Reporter):
    """(the model to train, the same without its DistributedDataParallel wrapper)."""
    set_seed(args.seed)  # same initial weights on every rank (DDP broadcasts rank 0's anyway)
    model, start = finetune.start_model(spec, classes, Path(args.model_dir))
    if start:
        reporter.log(start)
    model = model.to(device, memory_format=devices.memory_format(device))  # type: ignore[call-overload]  # torch's stubs miss this pair
    if args.distributed and args.sync_bn:
        model = dist_utils.convert_sync_batchnorm(model)
        reporter.log("Sync BatchNorm: batch-norm statistics over the global batch of "
                     f"{args.batch_size * args.world_size} images ({args.world_size} processes x {args.batch_size})")
    if args.freeze_backbone:  # after Sync BatchNorm, whose layers are new: DDP then syncs the head's gradients alone
        reporter.log(finetune.freeze_backbone(model, spec))
    if not args.distributed:
        return model, model
    return nn.parallel.DistributedDataParallel(model, device_ids=[args.local_rank] if device.type == "cuda" else None), model


def _train(args, reporter: Reporter, output_dir: Path) -> dict:
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)  # chosen by init_distributed_mode
    args.amp = devices.precision(args.amp, device)
    args.workers = devices.loader_workers(args.workers, device, int(os.environ.get("LOCAL_WORLD_SIZE", "1")))
    devices.setup(device)
    start = artifact(args.model_dir)
    spec = model_format.read_start(start, "", "Untrained model")
    data = load_data(args)
    train_set, val_set, _, _, classes, _ = data
    reporter.log(f"{len(train_set)} training and {len(val_set)} validation images, {len(classes)} classes; "
                 f"{spec['model_name']}, {args.world_size} process(es), {torch.get_num_threads()} thread(s) each")
    _report_device(args, device, reporter, loading.describe(train_set, device))
    run = _Run(args, spec, data, device, reporter)
    resume = args.resume or (str(run.checkpoint_path) if args.auto_resume and run.checkpoint_path is not None
                             and run.checkpoint_path.is_file() else "")
    if resume:  # (auto: the processes restarted after one of them died, torchrun's elastic restart)
        checkpoint.resume(run, resume)
    for epoch in range(run.start_epoch, args.epochs + 1 if not run.stopped else run.start_epoch):
        if run.epoch(epoch) and epoch < args.epochs:
            reporter.log(f"early stopping: the validation loss has not improved for {args.patience} epoch(s) "
                         f"(best {run.keeper.best_loss:.4f} at epoch {run.keeper.best_epoch})")
            break
        reporter.check_cancelled()
        if epoch < args.epochs and dist_utils.broadcast_flag(reporter.stop_requested(), device):
            reporter.log(f"early terminated after epoch {epoch} of {args.epochs}: the sweep's policy stopped this "
                         f"trial (keeping the best epoch so far, {run.keeper.best_epoch})")
            break
    origin = finetune.fine_tuned_from(spec, start.meta)
    info = {**({"fine_tuned_from": origin} if origin else {}), **run.summary()}
    assert run.keeper.best_state is not None  # else run.summary() raised TrainingDivergedError
    if dist_utils.is_main_process():
        models.write_trained(output_dir, spec, run.keeper.best_state, info)
    reporter.log(f"kept the weights of epoch {info['best_epoch']} (validation loss {info['validation_loss']:.4f}, "
                 f"top-1 accuracy {100 * info['validation_top1_accuracy']:.2f}%)")
    return {"model_name": spec["model_name"], **info}


# --------------------------------------------------------------------------- command line


def get_args_parser(add_help: bool = True) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description="Image classification training", add_help=add_help)
    p.add_argument("--model-dir", required=True,
                   help="UntrainedModelDirectory (from ResNet / DenseNet), or a trained ModelDirectory to fine-tune")
    p.add_argument("--train-dir", required=True, help="training ImageDirectory")
    p.add_argument("--val-dir", required=True, help="validation ImageDirectory")
    p.add_argument("--output-dir", required=True, help="where the ModelDirectory is written (rank 0)")
    p.add_argument("--work-dir", default="", help="where checkpoint.pth is written after every epoch")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--batch-size", type=int, default=16, help="images per step and process")
    p.add_argument("--warmup-steps", type=int, default=0)
    p.add_argument("--lr", type=float, default=0.001)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--patience", type=int, default=3)
    p.add_argument("--print-freq", type=int, default=10)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--weight-decay", type=float, default=1e-4)
    p.add_argument("--workers", type=int, default=-1,
                   help="data loading processes (0: in the training process; -1: sized from the cores: devices.py)")
    p.add_argument("--threads", type=int, default=0, help="torch threads per process (0: torch's default)")
    p.add_argument("--sync-bn", action="store_true",
                   help="distributed: batch-norm statistics over the global batch, not each process's part")
    p.add_argument("--freeze-backbone", action="store_true",
                   help="train the classifier head only: the rest keeps its starting weights (a fixed feature extractor)")
    p.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"),
                   help="auto: the GPU of this process's local rank when CUDA can use one, else the CPU")
    p.add_argument("--amp", default="auto", choices=devices.PRECISIONS,
                   help="mixed precision; auto: bf16 on GPUs that support it, fp16 on older ones, off on CPUs")
    p.add_argument("--decode", default="auto", choices=("auto", "host", "device"),
                   help="host: Pillow in the data-loading processes; device: torchvision.io.decode_jpeg on the "
                        "training device (JPEG files only); auto: on a GPU fed by a core or two when every image is a JPEG")
    p.add_argument("--devices-dir", default="", help="where each process records its device (rank-<r>.json)")
    p.add_argument("--resume", default="", help="checkpoint.pth to continue from")
    p.add_argument("--auto-resume", action="store_true",
                   help="go on from --work-dir's checkpoint.pth when it is there (the processes were restarted)")
    p.add_argument("--checkpoint-minutes", type=float, default=0.0,
                   help="also write the checkpoint in the middle of an epoch this often (0: at each epoch's end only)")
    p.add_argument("--stop-file", default="",
                   help="when this file exists after an epoch, stop there as early stopping would (a sweep's policy)")
    p.add_argument("--label", default="", help="put before every error message (the caller's name for this training)")
    return p


if __name__ == "__main__":
    try:
        main(get_args_parser().parse_args())
    except ModuleError as e:  # the user's mistake: its message, not a traceback
        print(f"{type(e).__name__}: {e}", file=sys.stderr, flush=True)
        sys.exit(1)
