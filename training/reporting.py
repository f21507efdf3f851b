"""Where training's log lines and metrics go (the driver log and metrics file of a process, or a
designer node's context), and whether it is asked to wrap up early."""
from __future__ import annotations

from pathlib import Path

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
        """A line of this process's own driver log, on every rank (each has its own: training.rank)."""
        print(text, flush=True)

    def metric(self, name: str, value: float, step: int, steps: int | None = None) -> None:
        if dist_utils.is_main_process() and self.metrics_file is not None:
            metrics.append(self.metrics_file, name, value, step, steps)

    def check_cancelled(self) -> None:
        pass

    def stop_requested(self) -> bool:
        """Rank 0 is asked to wrap up (a sweep's policy ended this trial early) when the stop file
        exists; the caller broadcasts rank 0's answer to every rank."""
        return self.stop_file is not None and dist_utils.is_main_process() and self.stop_file.exists()



def report_epoch(reporter: Reporter, epoch: int, epochs: int, f: dict) -> None:
    top5 = f"  top-5 {100 * f['validation_top5_accuracy']:.2f}%" if "validation_top5_accuracy" in f else ""
    reporter.log(f"Epoch {epoch}: lr {f['learning_rate']:.6f}  {f['training_images_per_second']:.1f} img/s  "
                 f"training loss {f['training_loss']:.4f}  error {100 * f['training_error']:.2f}%  "
                 f"validation loss {f['validation_loss']:.4f}  top-1 {100 * f['validation_top1_accuracy']:.2f}%{top5}")
    for name, value in f.items():
        reporter.metric(name, value, epoch, epochs)
