"""One node of a distributed job: PyTorch's own launcher (`torch.distributed.run`, c10d
rendezvous) as a child process, its output copied into the launcher's log, and a clean stop.

No torch import here: this runs in the Celery worker, and torch is loaded by the processes that
torchrun starts. Every one of them runs under `supervision.rank`, which writes its output to its
own driver log (sdk.layout.driver_log). Who starts which node is decided on the Django side
(designer/pipelines/runs/launchers/distributed.py).
"""
from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from sdk.layout import MPI_LOG  # noqa: F401 - launch.MPI_LOG: the launchers' log of a node
from supervision.gpus import Lease
from supervision.rank import PEER_LOST

ROOT = Path(__file__).resolve().parent.parent
# how long the processes of a node have to leave after SIGTERM before they are killed
STOP_GRACE_SECONDS = 5.0


def torchrun_command(module: str, argv: list[str], nnodes: int, nproc: int, endpoint: str, run_id: str,
                     is_host: bool, local_addr: str = "", join_timeout: int = 60, max_restarts: int = 0) -> list[str]:
    """`python -m torch.distributed.run ... -m supervision.rank MODULE ARGV` for one node.

    c10d rendezvous at `endpoint` (host:port of node 0, which hosts the store: is_host); a failed
    process restarts every process of the job `max_restarts` times (torchrun's elastic restarts:
    the script goes on from its checkpoint), then fails the job; torchrun numbers the nodes as they join.
    """
    conf = f"is_host={'true' if is_host else 'false'},join_timeout={join_timeout}"
    return [sys.executable, "-m", "torch.distributed.run", "--nnodes", str(nnodes), "--nproc-per-node", str(nproc),
            "--rdzv-backend", "c10d", "--rdzv-endpoint", endpoint, "--rdzv-id", run_id, "--rdzv-conf", conf,
            "--max-restarts", str(max(0, int(max_restarts))), "--monitor-interval", "0.5", *(["--local-addr", local_addr] if local_addr else []),
            "-m", "supervision.rank", module, *argv]


def node_command(module: str, argv: list[str]) -> list[str]:
    """`python -m supervision.rank MODULE ARGV` for one node of a per-node launch: no torchrun, the
    command starts the node's processes itself (its log is the node's: supervision.rank)."""
    return [sys.executable, "-m", "supervision.rank", module, *argv]


def slot_threads(cpus: int, slots: int, processes: int = 1) -> int:
    """Torch's threads for each process of a node: the worker's `cpus` shared by its `slots` (Celery's
    concurrency: that many nodes may run at once) and by the `processes` of this node, at least one.
    More threads than cores is far slower, not a little: two processes of two threads each training a
    ResNet-18 on two cores took 200 ms a step against 74 ms with one thread each (their OpenMP threads
    wait on each other); torchrun's own default is one thread a process for the same reason."""
    return max(1, cpus // (max(1, slots) * max(1, processes)))


def rank_environment(logs_dir: Path, state_dir: Path, worker: str, node_index: int, threads: int) -> dict[str, str]:
    """What every process of a node inherits (on top of what torchrun sets)."""
    return {"DESIGNER_RANK_LOG_DIR": str(logs_dir), "DESIGNER_RANK_STATE_DIR": str(state_dir),
            "DESIGNER_WORKER": worker, "DESIGNER_NODE_INDEX": str(node_index), "OMP_NUM_THREADS": str(threads),
            "PYTHONUNBUFFERED": "1", "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    # if the worker process is killed (machine lost, kill -9), torchrun goes with it
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


class NodeProcess:
    """torchrun for one node, in a process group of its own; its output, each line prefixed
    with the node, appended to the launcher's log."""

    def __init__(self, command: list[str], env: dict[str, str], mpi_log: Path, prefix: str, gpus: Lease | None = None):
        self.gpus = gpus  # the GPUs this node's processes hold (supervision/gpus.py): released when they end
        self.mpi_log = Path(mpi_log)
        self.mpi_log.parent.mkdir(parents=True, exist_ok=True)
        self.prefix = prefix
        self.proc = subprocess.Popen(command, cwd=ROOT, env={**os.environ, **env}, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
                                     preexec_fn=_die_with_parent if sys.platform == "linux" else None)
        self.log(f"started torchrun (pid {self.proc.pid}): {' '.join(command)}")
        self._copier = threading.Thread(target=self._copy, daemon=True, name=f"torchrun-log-{self.proc.pid}")
        self._copier.start()

    def log(self, text: str) -> None:
        append_log(self.mpi_log, f"{self.prefix}: {text}")

    def _copy(self) -> None:
        assert self.proc.stdout is not None  # started with stdout=PIPE
        with self.mpi_log.open("a", encoding="utf-8", buffering=1) as out, self.proc.stdout:  # closed at its end
            for raw in self.proc.stdout:
                out.write(f"{self.prefix}: {raw.decode(errors='replace').rstrip()}\n")

    def poll(self) -> int | None:
        code = self.proc.poll()
        if code is not None and self.gpus is not None:
            self.gpus.release()
        return code

    def stop(self) -> int:
        """End torchrun and every process it started; return its exit code. Idempotent."""
        if self.proc.poll() is None:
            # torchrun answers SIGTERM by terminating its processes (their own sessions), then exits
            self._signal(signal.SIGTERM)
            try:
                self.proc.wait(STOP_GRACE_SECONDS)
            except subprocess.TimeoutExpired:
                self._signal(signal.SIGKILL)  # its processes die with it (supervision.rank: PDEATHSIG)
                self.proc.wait()
            self.log(f"stopped (exit code {self.proc.returncode})")
        if self.gpus is not None:
            self.gpus.release()
        self._copier.join(timeout=STOP_GRACE_SECONDS)
        return self.proc.returncode

    def _signal(self, sig: int) -> None:
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:
            pass


def append_log(path: Path, text: str) -> None:
    stamp = time.strftime("%H:%M:%S")
    with Path(path).open("a", encoding="utf-8") as f:
        for line in text.splitlines() or [""]:
            f.write(f"{stamp} {line}\n")


# ---------------------------------------------------------------- what the processes left behind


def rank_states(state_dir: Path) -> dict[int, dict]:
    """{rank: what supervision.rank wrote about it}: node index, worker, and when it failed."""
    states = {}
    for path in Path(state_dir).glob("rank-*.json"):
        try:
            states[int(path.stem.split("-", 1)[1])] = json.loads(path.read_text())
        except (ValueError, OSError):
            continue  # being written
    return states




@dataclass(frozen=True)
class RankFailure:
    rank: int
    at: float  # when (time.time() of the rank, or of its watcher the moment it ended)
    how: str  # "failed (ValueError: ...)", "was killed by signal 9 (SIGKILL)", "exited with code 3"
    lost_a_peer: bool
    state: dict
    unsure: bool = False  # it ended, but maybe well

    @property
    def blame(self) -> int:
        """Lower first: a failure of its own, then an end that may be one, then a lost peer."""
        return 2 if self.lost_a_peer else 1 if self.unsure else 0


def rank_failure(rank: int, state: dict) -> RankFailure | None:
    """How a rank failed, from what it (supervision.rank) or its watcher recorded; None if it did not."""
    if state.get("failed_at"):
        reason = state.get("reason", "")
        how = reason if reason.startswith("exited with code") else f"failed ({reason})"
        return RankFailure(rank, state["failed_at"], how, any(p in reason.lower() for p in PEER_LOST), state)
    if state.get("signal") and state.get("ended_at"):
        number = state["signal"]
        try:
            name = f" ({signal.Signals(number).name})"
        except ValueError:
            name = ""
        if number == signal.SIGKILL:
            name = " (SIGKILL: sent by someone, or by the kernel when memory ran out)"
        return RankFailure(rank, state["ended_at"], f"was killed by signal {number}{name}", False, state)
    if state.get("exit_code") and state.get("ended_at"):
        return RankFailure(rank, state["ended_at"], f"exited with code {state['exit_code']}", False, state)
    if state.get("ended_at") and "exit_code" not in state:  # reaped before its watcher could look
        return RankFailure(rank, state["ended_at"], "ended without a word (its exit status was not seen)", False,
                           state, unsure=True)
    return None


def first_failure(state_dir: Path) -> RankFailure | None:
    """The rank whose failure came first and was not caused by another's (the others usually fail
    because it did: a lost connection, or the stop that follows), or None."""
    failures = [f for rank, st in rank_states(state_dir).items() if (f := rank_failure(rank, st))]
    if not failures:
        return None
    return min(failures, key=lambda f: (f.blame, f.at))


def tail(path: Path, lines: int = 20) -> str:
    try:
        with Path(path).open("rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 64 * 1024))
            text = f.read().decode(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.rstrip().splitlines()[-lines:])
