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
    # seconds a job asked to stop early has before every process is ended (it then completes as stopped, with what
    # it wrote); None: it is waited for (a module whose training stops at its epoch's end when asked)
    stop_grace: float | None = None
    # one process per node instead of one per rank: its command starts the node's processes itself (the
    # original's per-node launch, `torch.distributed.launch --node_rank $NODE_RANK ...`); the designer gives
    # it NODE_RANK, NODE_COUNT, PROCESS_COUNT_PER_NODE, WORLD_SIZE, MASTER_ADDR and MASTER_PORT (node 0's)
    per_node: bool = False
    # a process that dies (a signal, an out-of-memory kill, an error) restarts every process of the
    # job, from the script's last checkpoint, this many times (torchrun's elastic restarts; the
    # node's Max retries); 0: it fails the job
    max_restarts: int = 0


STOP_GRACE_SECONDS = 60.0  # a sweep's default policy.stop_grace_seconds
# the index of the GPU a 1 x 1 job that runs in the worker's own process holds (supervision/gpus.py):
# set by the engine while the module runs, read by training/devices.py
GPU_ENV = "DESIGNER_GPU"
COOPERATIVE = "cooperative"  # it read the stop request (stop_requested() said True) and ended on its own
ENDED = "ended"  # still running stop_grace_seconds after the request: its processes were ended
FINISHED = "finished"  # it ended on its own without reading the request: it ran its course


@dataclass(frozen=True)
class Stopped:
    """How a command that the engine asked to stop early ended (Context.report_stop): `how` is
    COOPERATIVE, ENDED or FINISHED; `grace`: the seconds it was given; `after`: the seconds from
    the request to its end; `seen`: its stop_requested() said True (it read the request)."""

    how: str
    grace: float
    after: float
    seen: bool = False

    def text(self) -> str:
        """The node log's line: which of the three happened."""
        if self.how == ENDED:
            read = "it read the request but did not stop in time" if self.seen else "it never read stop_requested()"
            return (f"the script was still running {self.grace:g} s after it was asked to stop (stop_grace_seconds; {read}): "
                    "its processes were ended; its outputs keep what it had written (they may be partial)")
        if self.how == COOPERATIVE:
            return f"the script stopped when asked ({self.after:.1f} s after the request): it read stop_requested()"
        return f"the script finished on its own {self.after:.1f} s after it was asked to stop, without reading the request"


@runtime_checkable
class Context(Protocol):
    """The context the engine hands to `Module.run(ctx, **inputs)`."""

    params: dict[str, Any]  # every declared parameter, defaults filled in, checked
    run_settings: dict[str, int]  # node_count, process_count_per_node
    node_dir: Path  # the node's own folder (scratch space may go in a sub-folder of it)
    attempt: int = 1  # 2 and more: the node runs again after its worker was lost (checkpoints are in node_dir)
    log_path: Path  # the node's driver log (logs/70_driver_log.txt): a command's output is appended to it
    stop_grace_seconds: float  # how long a command asked to stop early has before its processes are ended

    @property
    def world_size(self) -> int:
        """Node count x Process count per node (1: run in-process)."""

    def output_dir(self, port: str) -> Path:
        """The (created) folder of an output port, by name; the module writes its files there."""

    def made_output(self, port: str, type_name: str) -> Path:
        """The folder (not created) of an output the module did not declare but may make as it runs
        (the MLflow model a component's script logs): an output of the node, of port type
        `type_name`, when it holds files once run() returns."""

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

    def report_stop(self, stopped: Stopped) -> None:
        """How a command asked to stop early ended (its processes run by the module: a component's
        command, a distributed job): logged, and recorded for the sweep's trial."""

    def check_cancelled(self) -> None:
        """Raise sdk.errors.Cancelled if the user cancelled the run: call it at safe points (between
        files, images, batches, steps); the engine then removes the node's partial outputs."""

    def launch_distributed(self, job: DistributedJob) -> Stopped | None:
        """Run `job` in world_size processes; return when all have finished, or raise
        DistributedLaunchError (or Cancelled). When the engine asked the job to stop early (its
        stop_file): how it ended (Stopped), else None."""
