"""What a module receives: its inputs (`InputArtifact`) and a `Context`, its only window on the
outside world. A module never talks to a database, a socket, Celery or the workers.

    def run(self, ctx, dataset):                 # one keyword argument per input port
        images = image_directory.read(dataset, self.label, "Dataset")
        for i, item in enumerate(images.items):
            ctx.check_cancelled()                # a safe point: Cancelled is raised here
            ...
        image_directory.write(ctx, "image_directory", items)
        ctx.log("done"); ctx.metric("accuracy", 0.97, step=1)

A distributed module (`distributed = True`) asks for its processes with
`ctx.launch_distributed(DistributedJob("training.train", argv, ...))` when `ctx.world_size > 1`.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable


@dataclass
class InputArtifact:
    """What a module receives for each connected input port: the output directory of the node
    upstream, its port type and the fields of its _meta.yaml (see sdk.formats)."""

    path: Path
    type: str
    meta: dict


@dataclass
class DistributedJob:
    """What a distributed module asks to run: `python -m <module> <argv>` in every process of
    Node count x Process count per node (each with RANK, WORLD_SIZE, LOCAL_RANK...). The designer's
    workers start them; the module never sees workers."""

    module: str
    argv: list[str]
    metrics_file: Path | None = None  # JSON lines {name, value, step} that rank 0 appends: relayed as metrics
    gpu_argv: list[str] | None = None  # added when every process has a GPU (NCCL); None: CPU only (Gloo)
    cpu_argv: list[str] | None = None  # added when the processes run on CPUs (Gloo), GPUs or not on the machines
    stop_file: Path | None = None  # created when the engine asks the job to wrap up early (Context.stop_requested)
    env: dict[str, str] | None = None  # more environment of every process (a component's DESIGNER_METRICS_FILE...)
    timeout: float = 0  # seconds: the job fails and every process is ended once it has run this long; 0: no limit


@runtime_checkable
class Context(Protocol):
    """The context the engine hands to `Module.run(ctx, **inputs)`."""

    params: dict[str, Any]  # every declared parameter, defaults filled in, checked
    run_settings: dict[str, int]  # node_count, process_count_per_node
    node_dir: Path  # the node's own folder (scratch space may go in a sub-folder of it)
    log_path: Path  # the node's driver log (logs/70_driver_log.txt): a command's output is appended to it

    @property
    def world_size(self) -> int:
        """Node count x Process count per node (1: run in-process)."""

    def output_dir(self, port: str) -> Path:
        """The (created) folder of an output port, by name; the module writes its files there."""

    def set_meta(self, port: str, **fields) -> None:
        """Extra fields for the output port's _meta.yaml (for example the class list)."""

    def log(self, text: str) -> None:
        """A line (or lines) of the node's log, shown live."""

    def metric(self, name: str, value: float, step: int | None = None, steps: int | None = None) -> None:
        """A figure of the node (drawn as a chart per name, over steps). `steps`: how many steps the
        module means to run, when it knows (a sweep's policy does not stop a trial at its last)."""

    def stop_requested(self) -> bool:
        """True when the engine asks the module to wrap up early and keep what it has (a sweep's
        early-termination policy ended this trial): finish the current step, write the outputs with
        the best so far, return normally. Ask it only where stopping would save work."""

    def check_cancelled(self) -> None:
        """Raise sdk.errors.Cancelled if the user cancelled the run: call it at safe points (between
        files, images, batches, steps); the engine then removes the node's partial outputs."""

    def launch_distributed(self, job: DistributedJob) -> None:
        """Run `job` in world_size processes; return when all have finished, or raise
        DistributedLaunchError (or Cancelled)."""
