"""Small real modules used by the engine tests (loaded through DESIGNER_EXTRA_MODULES)."""
import os
import time

from sdk.context import DistributedJob
from sdk.declarations import Bool, Float, ImageDirectory, Int, Module, Port, ScoredDataset, Text
from sdk.errors import ModuleError


def _sleep(ctx, seconds: float) -> None:
    """Sleep in short steps, each a safe point where a cancel stops the module."""
    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        ctx.check_cancelled()
        time.sleep(min(0.05, left))


def _hold(ctx, path: str) -> None:
    """Wait while the file at `path` exists: a test holds a node running until it has seen it run."""
    while path and os.path.exists(path):
        ctx.check_cancelled()
        time.sleep(0.05)


def _read(inp) -> int:
    return int((inp.path / "value.txt").read_text())


class ToySource(Module):
    kind = "toy_source"
    label = "Toy source"
    category = "Tests"
    outputs = [Port("Out", ImageDirectory)]
    params = [Int("Value", default=1, min=0, max=1000, help="the number written"), Float("Sleep", default=0.0, min=0)]

    def run(self, ctx):
        _sleep(ctx, ctx.params["sleep"])
        (ctx.output_dir("out") / "value.txt").write_text(str(ctx.params["value"]))
        ctx.log(f"wrote {ctx.params['value']}")


class ToyBlob(Module):
    kind = "toy_blob"
    label = "Toy blob"
    category = "Tests"
    outputs = [Port("Out", ImageDirectory)]
    params = [Int("Files", default=4, min=1, max=1000),
              Int("File KB", default=64, min=1, max=10_000, help="the first file's size; the n-th is n times as large")]

    def run(self, ctx):
        """An output of random bytes in files of growing sizes (their uploads end one after another)."""
        out = ctx.output_dir("out")
        for i in range(ctx.params["files"]):
            (out / f"blob{i:04d}.bin").write_bytes(os.urandom(ctx.params["file_kb"] * 1024 * (i + 1)))
        (out / "value.txt").write_text(str(ctx.params["files"]))
        ctx.log(f"wrote {ctx.params['files']} files")


class ToyAdd(Module):
    kind = "toy_add"
    label = "Toy add"
    category = "Tests"
    inputs = [Port("Input", ImageDirectory), Port("Extra", ImageDirectory, optional=True)]
    outputs = [Port("Out", ImageDirectory)]
    params = [Int("Amount", default=1, min=-100, max=100), Float("Sleep", default=0.0, min=0, max=600),
              Bool("Fail", default=False, help="raise an error instead"),
              Text("Hold file", default="", help="runs on only once this file is gone")]

    def run(self, ctx, input, extra=None):
        _sleep(ctx, ctx.params["sleep"])
        _hold(ctx, ctx.params["hold_file"])
        if ctx.params["fail"]:
            raise ModuleError("asked to fail (parameter Fail is on)")
        total = _read(input) + ctx.params["amount"] + (_read(extra) if extra else 0)
        ctx.metric("total", total, step=1)
        (ctx.output_dir("out") / "value.txt").write_text(str(total))
        ctx.log(f"total {total}")


class ToyDeaf(Module):
    """A module deaf to a cancel: it sleeps with no safe point (user code that never calls
    ctx.check_cancelled), logging the process it runs in first."""
    kind = "toy_deaf"
    label = "Toy deaf"
    category = "Tests"
    inputs = [Port("Input", ImageDirectory)]
    outputs = [Port("Out", ImageDirectory)]
    params = [Float("Seconds", default=60.0, min=0, max=3600)]

    def run(self, ctx, input):
        ctx.log(f"pid {os.getpid()}")
        time.sleep(ctx.params["seconds"])
        (ctx.output_dir("out") / "value.txt").write_text(str(_read(input)))


class ToySink(Module):
    kind = "toy_sink"
    label = "Toy sink"
    category = "Tests"
    inputs = [Port("Scores", ScoredDataset)]
    outputs = []
    params = []

    def run(self, ctx, scores):
        ctx.log("sink")


class ToyDistributed(Module):
    """A distributed job in a few seconds (tests/toy_rank.py): every rank all-reduces a number
    `Steps` times; rank `Fail rank` raises at step `Fail at step`."""

    kind = "toy_distributed"
    label = "Toy distributed"
    category = "Tests"
    distributed = True
    outputs = [Port("Out", ImageDirectory)]
    params = [Int("Steps", default=5, min=1, max=100000), Float("Step seconds", default=0.1, min=0, max=60),
              Int("Fail rank", default=-1, min=-1, max=1000, help="-1: none"), Int("Fail at step", default=2, min=1)]

    def run(self, ctx):
        out = ctx.output_dir("out")
        argv = ["--out", str(out), "--steps", str(ctx.params["steps"]), "--step-seconds", str(ctx.params["step_seconds"]),
                "--fail-rank", str(ctx.params["fail_rank"]), "--fail-at", str(ctx.params["fail_at_step"])]
        ctx.launch_distributed(DistributedJob("tests.toy_rank", argv, metrics_file=out / "metrics.jsonl",
                                              max_restarts=ctx.run_settings["max_retries"]))
        ctx.log(f"world size {(out / 'world.txt').read_text()}")


class ToyTraining(Module):
    """Per-epoch loss and accuracy, an epoch every `Epoch seconds`, like a training run (Metrics pane)."""

    kind = "toy_training"
    label = "Toy training"
    category = "Tests"
    outputs = [Port("Out", ImageDirectory)]
    params = [Int("Epochs", default=5, min=1, max=1000), Float("Epoch seconds", default=0.5, min=0, max=60),
              Text("Hold file", default="", help="after its first epoch, goes on only once this file is gone")]

    def run(self, ctx):
        for epoch in range(1, ctx.params["epochs"] + 1):
            if epoch == 2:
                _hold(ctx, ctx.params["hold_file"])
            _sleep(ctx, ctx.params["epoch_seconds"])
            ctx.metric("loss", 1.0 / epoch, step=epoch)
            ctx.metric("accuracy", 1.0 - 0.5 / epoch, step=epoch)
            ctx.log(f"epoch {epoch}: loss {1.0 / epoch:.3f}")
        (ctx.output_dir("out") / "value.txt").write_text(str(ctx.params["epochs"]))


class ToyTuning(Module):
    """A training run in miniature for sweeps: per epoch, `score` = quality x (1 - 0.5 / epoch)
    where quality = min(1, Learning rate x 100) (a rate 1000x too small scores 1000x lower),
    and `loss` = 1 - score. Stops after an epoch when asked to wrap up (a sweep's policy)."""

    kind = "toy_tuning"
    label = "Toy tuning"
    category = "Tests"
    inputs = [Port("Input", ImageDirectory, optional=True)]
    outputs = [Port("Out", ImageDirectory)]
    params = [Float("Learning rate", default=0.01, min=0, min_exclusive=True), Int("Epochs", default=6, min=1, max=1000),
              Float("Epoch seconds", default=0.2, min=0, max=60), Int("Batch size", default=16, min=1, max=1024),
              Int("Keep epoch", default=0, min=0, help="the epoch whose model it says it kept (best_epoch), as "
                                                       "Train PyTorch Model does; 0: says nothing"),
              Text("Hold file", default="", help="after its first epoch, goes on only once this file is gone")]
    metrics = ("score", "loss")

    def run(self, ctx, input=None):
        quality = min(1.0, ctx.params["learning_rate"] * 100)
        epochs = ctx.params["epochs"]
        best = 0.0
        for epoch in range(1, epochs + 1):
            if epoch == 2:
                _hold(ctx, ctx.params["hold_file"])
            _sleep(ctx, ctx.params["epoch_seconds"])
            score = quality * (1 - 0.5 / epoch)
            best = max(best, score)
            ctx.metric("score", score, step=epoch, steps=epochs)
            ctx.metric("loss", 1 - score, step=epoch, steps=epochs)
            if epoch < epochs and ctx.stop_requested():
                ctx.log(f"early terminated after epoch {epoch} of {epochs}")
                break
        (ctx.output_dir("out") / "value.txt").write_text(f"{best}")
        if ctx.params["keep_epoch"]:
            ctx.set_meta("out", best_epoch=ctx.params["keep_epoch"])
