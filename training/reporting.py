"""Where training's log lines and metrics go (the driver log and metrics file of a process, or a
designer node's context), and whether it is asked to wrap up early."""
from __future__ import annotations

from pathlib import Path

import torch

from sdk import script
from sdk.formats import metrics
from training import distributed as dist_utils


class Reporter:
    """Where log lines and metrics go. This default prints on rank 0 only (the driver log of a
    torchrun process) and appends metrics to <output dir>/metrics.jsonl; the designer module
    passes one that writes to its node context instead."""

    def __init__(self, metrics_file: Path | None = None, stop_file: Path | None = None):
        self.metrics_file = metrics_file
        self.stop_file = Path(stop_file) if stop_file else None

    def log(self, text: str) -> None:
        if dist_utils.is_main_process():
            print(text, flush=True)

    def log_own(self, text: str) -> None:
        """A line of this process's own driver log, on every rank (each has its own: supervision.rank)."""
        print(text, flush=True)

    def metric(self, name: str, value: float, step: int, steps: int | None = None) -> None:
        if dist_utils.is_main_process() and self.metrics_file is not None:
            metrics.append(self.metrics_file, name, value, step, steps)

    def check_cancelled(self) -> None:
        pass

    def stop_requested(self) -> bool:
        """Rank 0 is asked to wrap up (a sweep's policy ended this trial early) when the stop file
        exists; the caller broadcasts rank 0's answer to every rank."""
        return self.stop_file is not None and dist_utils.is_main_process() and script.asked(self.stop_file)



def report_epoch(reporter: Reporter, epoch: int, epochs: int, f: dict) -> None:
    top5 = f"  top-5 {100 * f['validation_top5_accuracy']:.2f}%" if "validation_top5_accuracy" in f else ""
    reporter.log(f"Epoch {epoch}: lr {f['learning_rate']:.6f}  {f['training_images_per_second']:.1f} img/s  "
                 f"training loss {f['training_loss']:.4f}  error {100 * f['training_error']:.2f}%  "
                 f"validation loss {f['validation_loss']:.4f}  top-1 {100 * f['validation_top1_accuracy']:.2f}%{top5}")
    for name, value in f.items():
        reporter.metric(name, value, epoch, epochs)


class EpochSums:
    """An epoch's running sums, kept on the training device (no host sync per step), and the first
    step whose loss was not a number."""

    def __init__(self, device):
        self.loss_sum = torch.zeros((), dtype=torch.float64, device=device)
        self.error_sum = torch.zeros((), dtype=torch.int64, device=device)
        self.first_bad = torch.zeros((), dtype=torch.int64, device=device)  # 0: none yet
        self.bad_value = torch.zeros((), dtype=torch.float32, device=device)
        self.last_loss = torch.zeros((), dtype=torch.float32, device=device)
        self.seen = 0

    def add_step(self, step: int, loss, output, targets) -> None:
        loss = loss.detach().float()
        n = targets.shape[0]
        self.loss_sum += loss.double() * n
        self.error_sum += (output.detach().argmax(1) != targets).sum()
        bad = (self.first_bad == 0) & ~torch.isfinite(loss)
        self.first_bad.copy_(torch.where(bad, step, self.first_bad))
        self.bad_value.copy_(torch.where(bad, loss, self.bad_value))
        self.last_loss.copy_(loss)
        self.seen += n

    def read(self) -> tuple[float, int, float]:
        """(the last step's loss, the first step whose loss was not a number or 0, that loss): one
        wait for the device, at a print or the end of the epoch."""
        last, first_bad, bad_value = (t.item() for t in (self.last_loss, self.first_bad, self.bad_value))
        return last, int(first_bad), bad_value

    def state(self) -> dict:
        """What a checkpoint in the middle of an epoch keeps of the sums so far."""
        return {k: v.detach().cpu() if torch.is_tensor(v) else v for k, v in vars(self).items()}

    def load(self, state: dict) -> None:
        for k, v in state.items():
            current = getattr(self, k)
            setattr(self, k, v.to(current.device) if torch.is_tensor(current) else v)

    @property
    def loss(self) -> float:
        return self.loss_sum.item()

    @property
    def errors(self) -> float:
        return float(self.error_sum.item())
