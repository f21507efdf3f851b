"""Runs one node: resolves its parameters, gives the module a context, writes outputs and log.

Layout of a node's artifacts: `<node_dir>/<output port>/` per output (each with a `_meta.yaml`
naming the port type) and `<node_dir>/logs/<log file>`, every path from paths.py (which checks
that it stays in the node's folder). The executor reports what happens as events through `emit`;
it never talks to a database, a socket or Celery.

Cancel is cooperative: `cancelled()` is asked whenever the module calls ctx.check_cancelled() at
one of its safe points (between files, images, batches, steps), which raises Cancelled there. A
node that fails or is cancelled leaves no output folder behind (its log stays), so that nothing
half-written is ever read or reused.
"""
from __future__ import annotations

import os
import shutil
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from designer.engine import graph, paths
from designer.engine.paths import LOG_DIR, LOG_FILE, OutsideFolder  # noqa: F401 - part of this module's API
from designer.engine.store import StoreError
from sdk.context import STOP_GRACE_SECONDS, Context, DistributedJob, InputArtifact, Stopped
from sdk.declarations import PORT_TYPES, Module
from sdk.errors import Cancelled, DistributedLaunchError, ModuleError, NotInRangeValueError
from sdk.formats.meta import META_FILE, read_meta, write_meta  # noqa: F401 - part of this module's API
from supervision import gpus


@dataclass
class Event:
    type: str  # node_started | log | metric | stopped | node_finished | node_failed | node_cancelled
    node: str
    data: dict = field(default_factory=dict)


class NodeContext(Context):
    """The module's only window on the outside world: sdk.context.Context, as the engine keeps it."""

    def __init__(self, node_id: str, module: type[Module], params: dict, run_settings: dict,
                 node_dir: Path, emit: Callable[[Event], None], cancelled: Callable[[], bool] = lambda: False,
                 launcher: Callable[[NodeContext, DistributedJob], Stopped | None] | None = None,
                 stop: Callable[[], bool] = lambda: False, stop_grace: float = STOP_GRACE_SECONDS):
        self.node_id = node_id
        self.module = module
        self.params = params
        self.run_settings = run_settings
        self.node_dir = Path(node_dir)
        self._emit = emit
        self._cancelled = cancelled
        self._launcher = launcher
        self._stop = stop
        self.stop_grace_seconds = stop_grace
        self._extra_meta: dict[str, dict] = {}
        self.made: dict[str, str] = {}  # port -> type name: outputs the module may make as it runs (made_output)
        self.log_path = paths.log_file(paths.logs_dir(self.node_dir))
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log_file = self.log_path.open("a", encoding="utf-8", buffering=1)

    # ---- outputs
    def output_dir(self, port: str) -> Path:
        if self.module.output(port) is None:
            raise KeyError(f"{self.module.label} has no output port {port!r}")
        path = paths.output_dir(self.node_dir, port)
        path.mkdir(parents=True, exist_ok=True)
        return path

    def made_output(self, port: str, type_name: str) -> Path:
        """The folder of an output the module did not declare but may make as it runs (the MLflow
        model a component's script logs): kept as an output of the node, of `type_name`, when it
        holds files once run() returns; else nothing. Not created here."""
        if self.module.output(port) is not None:
            raise KeyError(f"{self.module.label} declares an output {port!r}: use output_dir")
        if type_name not in PORT_TYPES:
            raise KeyError(f"{type_name!r} is not a port type")
        self.made[port] = type_name
        folder = paths.output_dir(self.node_dir, port)
        shutil.rmtree(folder, ignore_errors=True)  # what an earlier try left is not this run's
        return folder

    def set_meta(self, port: str, **extra) -> None:
        """Extra fields for the port's _meta.yaml (for example the class list)."""
        self._extra_meta.setdefault(port, {}).update(extra)

    def logs_dir(self) -> Path:
        return self.log_path.parent

    # ---- reporting
    def log(self, text: str) -> None:
        """A line (or lines) of the node's log: stored in its log file only, which the page's Log
        pane and the API read and tail (no event, no database row per line)."""
        write_log(self._log_file, text)

    def metric(self, name: str, value: float, step: int | None = None, steps: int | None = None) -> None:
        data = {"name": name, "value": float(value), "step": step}
        if steps is not None:
            data["steps"] = steps
        self._emit(Event("metric", self.node_id, data))

    def stop_requested(self) -> bool:
        return bool(self._stop())

    def report_stop(self, stopped: Stopped) -> None:
        """A `stopped` event ({how, grace, after}: the sweep's trial says which happened) and its line in the log."""
        self.log(stopped.text())
        self._emit(Event("stopped", self.node_id, {"how": stopped.how, "grace": stopped.grace, "after": round(stopped.after, 3),
                                                     "seen": stopped.seen}))

    def check_cancelled(self) -> None:
        if self._cancelled():
            raise Cancelled()

    # ---- distributed
    @property
    def world_size(self) -> int:
        return self.run_settings["node_count"] * self.run_settings["process_count_per_node"]

    def launch_distributed(self, job: DistributedJob) -> Stopped | None:
        """Run `job` in Node count x Process count per node processes; return when all of them
        have finished (how they stopped when asked to stop early: Stopped), or raise
        DistributedLaunchError (or Cancelled)."""
        if self._launcher is None:
            raise DistributedLaunchError(f"{self.module.label}: Run settings ask for {self.world_size} processes, "
                                         "but nothing here can start them (run it on the designer's workers)")
        return self._launcher(self, job)

    def close(self) -> None:
        self._log_file.close()


def write_log(file, text: str) -> None:
    """Append `text` to an open log file, each line stamped with the time."""
    stamp = time.strftime("%H:%M:%S")
    file.write("".join(f"{stamp} {line}\n" for line in str(text).splitlines() or [""]))


def append_log(node_dir: Path, text: str) -> None:
    """Append `text` to the log of the node whose folder is `node_dir` (a process other than the
    module's: a sweep's policy judging it)."""
    path = paths.log_file(paths.logs_dir(node_dir))
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as f:
        write_log(f, text)


def execute(module: type[Module], node: dict, inputs: dict[str, InputArtifact], node_dir: Path,
            emit: Callable[[Event], None], cancelled: Callable[[], bool] = lambda: False,
            launcher: Callable[[NodeContext, DistributedJob], Stopped | None] | None = None,
            stop: Callable[[], bool] = lambda: False, stop_grace: float = STOP_GRACE_SECONDS,
            attempt: int = 1) -> dict[str, str]:
    """Run one node; return {output port: directory}. Raises what the module raised, after
    removing the output folders it had begun (nothing half-written is left to be read later).
    `launcher` starts the processes of a distributed module (NodeContext.launch_distributed);
    `stop` says when the module is asked to wrap up early (NodeContext.stop_requested); a command
    it runs has `stop_grace` seconds to stop before its processes are ended. `attempt`: 2 and
    more when the node runs again after its worker was lost (its checkpoints are in its folder)."""
    node_dir = Path(node_dir)
    _remove_outputs(module, node_dir)  # a retried node starts clean
    params = module.resolved_params(node.get("parameters", {}))
    run_settings = {"node_count": 1, "process_count_per_node": 1, "max_retries": graph.DEFAULT_MAX_RETRIES,
                    **default_run_settings(module),
                    **node.get("run_settings", {})}
    ctx = NodeContext(node["id"], module, params, run_settings, node_dir, emit, cancelled, launcher, stop, stop_grace)
    ctx.attempt = attempt
    emit(Event("node_started", node["id"], {"kind": module.kind}))
    started = time.monotonic()
    held = None
    try:
        ctx.log(f"{module.label} ({module.kind} v{module.version}) starts; parameters: {params}")
        check_params(module, params)
        held = _hold_a_gpu(module, ctx)
        module().run(ctx, **{p.name: inputs.get(p.name) for p in module.inputs})
        outputs = {}
        for port in module.outputs:
            out = ctx.output_dir(port.name)
            write_meta(out, port.type.name, ctx._extra_meta.get(port.name))
            outputs[port.name] = str(out)
        for name, type_name in ctx.made.items():
            out = paths.output_dir(node_dir, name)
            if out.is_dir() and any(f.is_file() for f in out.rglob("*")):
                write_meta(out, type_name, {**ctx._extra_meta.get(name, {}), "made": True})
                outputs[name] = str(out)
                ctx.log(f"output '{name}' ({type_name}) made by the node as it ran")
        ctx.log(f"finished in {time.monotonic() - started:.2f} s")
        return outputs
    except Cancelled:
        _remove_outputs(module, node_dir, ctx.made)
        ctx.log("cancelled by the user")
        raise
    except BaseException as e:
        _remove_outputs(module, node_dir, ctx.made)
        ctx.log(error_text(e))
        raise
    finally:
        ctx.close()
        if held is not None:
            held.release()
            os.environ.pop(gpus.GPU_ENV, None)


def default_run_settings(module: type[Module]) -> dict:
    """The Run settings a node of `module` has where it sets none: an Azure ML v2 component file's
    distribution and resources (sdk/azure_component.py); else none (1 x 1)."""
    return dict(getattr(module.component, "run_settings", None) or {})


def _hold_a_gpu(module: type[Module], ctx: NodeContext) -> gpus.Lease | None:
    """A module that runs on a GPU in this process (`uses_gpu`, at 1 x 1) holds one of the machine's
    GPUs alone while it runs, waiting while other jobs hold them all (supervision/gpus.py); a
    distributed job's launcher leases its nodes' GPUs itself."""
    total = gpus.machine_gpus()
    if not getattr(module, "uses_gpu", False) or ctx.world_size > 1 or total == 0:
        return None
    held = gpus.lease(1, total, say=ctx.log, check_cancelled=ctx.check_cancelled)
    os.environ[gpus.GPU_ENV] = str(held.indexes[0])
    ctx.log(f"holds GPU {held.indexes[0]} of this machine's {total} while it runs (one job per GPU)")
    return held


def _remove_outputs(module: type[Module], node_dir: Path, made=()) -> None:
    for name in [*(port.name for port in module.outputs), *made]:
        shutil.rmtree(paths.output_dir(node_dir, name), ignore_errors=True)


def check_params(module: type[Module], params: dict) -> None:
    """Every parameter again, at run time: a submitted pipeline was validated, but a node may also
    be run directly (tests, scripts). Raises NotInRangeValueError naming the module and parameter."""
    for p in module.params:
        error = p.check(params.get(p.name))
        if error:
            raise NotInRangeValueError(f"{module.label}: parameter {p.label!r}: {error}")


def error_text(e: BaseException) -> str:
    """What the user reads: a module's own error by name; anything else with its traceback."""
    if isinstance(e, (ModuleError, OutsideFolder, StoreError)):
        return f"{type(e).__name__}: {e}"
    return "".join(traceback.format_exception(e)).rstrip()
