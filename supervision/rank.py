"""One process of a distributed job, as torchrun starts it:

    python -m supervision.rank MODULE ARGS...      (RANK, WORLD_SIZE, LOCAL_RANK, GROUP_RANK from torchrun)

Sends its own output (stdout and stderr, so a traceback lands at its end) to
`$DESIGNER_RANK_LOG_DIR/<sdk.layout.driver_log(RANK)>`, records its node and, when it fails, the time
(`$DESIGNER_RANK_STATE_DIR/rank-<RANK>.json`: the launcher names the first rank that failed),
then runs `python -m MODULE ARGS...`. It dies with torchrun (PR_SET_PDEATHSIG): a killed worker
leaves no training process behind.

A process that is killed (SIGKILL, the kernel's OOM killer) or ends without Python's say
(os._exit, a crash in C) cannot record anything itself, and torchrun only reports it up to a
second later, after the other ranks have already failed "because the peer closed the connection".
So each rank forks a small watcher first (no torch in it, nothing but a wait): told by the kernel
the moment the rank ends (PR_SET_PDEATHSIG), it records when, and how, from the rank's
/proc/<pid>/stat (exit code or signal, field 52) before torchrun reaps it.
"""
from __future__ import annotations

import contextlib
import ctypes
import json
import os
import runpy
import signal
import socket
import sys
import time
import traceback
from pathlib import Path

from sdk import layout


def _die_with_parent() -> None:
    if sys.platform != "linux":
        return
    parent = os.getppid()
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # torchrun died before the line above
        os._exit(1)


def _redirect_output(path: Path) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    sys.stdout = open(1, "w", buffering=1, encoding="utf-8", errors="replace", closefd=False)
    sys.stderr = open(2, "w", buffering=1, encoding="utf-8", errors="replace", closefd=False)


# A rank that failed with one of these lost a peer: it failed because another rank ended first
# (Gloo: "Connection closed by peer ... typically caused by a remote worker crashing", or, when the
# processes start again, "timed out connecting: SO_ERROR: Connection refused"; NCCL: "remote
# process exited"), so it is never the cause while another rank failed otherwise, and it does not
# stop a restart of the job's processes.
PEER_LOST = ("closed by peer", "reset by peer", "broken pipe", "remote worker crash", "remote process exited",
             "timed out connecting", "connection refused", "pair closure")
# written in the state folder by a rank that failed of the script's own error (an exception, an
# exit code): torchrun restarts a job's processes after any failure (--max-restarts), and a
# restarted process that finds it ends at once, so that such an error fails the job without
# running it again (a signal, an out-of-memory kill, a lost peer: those are restarted)
SCRIPT_FAILED = "script-failed"


def _script_failed(state_dir: str, reason: str) -> None:
    if state_dir and not any(p in reason.lower() for p in PEER_LOST):
        with contextlib.suppress(OSError):
            (Path(state_dir) / SCRIPT_FAILED).write_text(reason)


class _State:
    def __init__(self, state_dir: str, rank: int, data: dict):
        self.path = Path(state_dir) / f"rank-{rank}.json" if state_dir else None
        self.data = data
        self.write()

    def write(self, **more) -> None:
        self.data.update(more)
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(self.data))
        os.replace(tmp, self.path)


def exit_status(pid: int) -> dict:
    """How process `pid` ended, while it is not yet reaped: {"exit_code": N} or {"signal": N}; {}
    when it is gone or still running. Linux: /proc/<pid>/stat field 52 (exit_code, in the form
    waitpid reports), set when the process starts to exit."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        fields = stat[stat.rindex(")") + 2:].split()  # the name in brackets may hold spaces
        state, status = fields[0], int(fields[49])
    except (OSError, ValueError, IndexError):
        return {}
    if state not in ("Z", "X") and status == 0:
        return {}
    return {"signal": status & 0x7F} if status & 0x7F else {"exit_code": (status >> 8) & 0xFF}


def _start_watcher(state: _State) -> None:
    """Fork the watcher of this process (see the module's docstring)."""
    if sys.platform != "linux" or state.path is None:
        return
    watched = os.getpid()
    sys.stdout.flush()
    sys.stderr.flush()
    if os.fork() != 0:
        return
    try:  # the watcher: every signal blocked (torchrun's stop signals the whole process group)
        signal.pthread_sigmask(signal.SIG_BLOCK, set(signal.Signals) - {signal.SIGKILL, signal.SIGSTOP})
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGUSR1)  # PR_SET_PDEATHSIG
        if os.getppid() == watched:
            signal.sigwait({signal.SIGUSR1})
        ended_at = time.time()
        how = {}
        for _ in range(20):  # the status is set as the rank starts to exit; a moment at most
            how = exit_status(watched)
            if how or not Path(f"/proc/{watched}").exists():
                break
            time.sleep(0.005)
        state.data = json.loads(state.path.read_text())  # what the rank itself wrote last
        state.write(ended_at=ended_at, **how)
    finally:
        os._exit(0)


def main() -> None:
    _die_with_parent()
    env = os.environ
    per_node = env.pop("DESIGNER_LAUNCH", "") == "per_node"  # one process for the node: its log and state are the node's
    rank = int(env.get("NODE_RANK", "0") if per_node else env.get("RANK", "0"))
    # torchrun calls the node's rank GROUP_RANK; the designer's reference says NODE_RANK
    env.setdefault("NODE_RANK", env.get("GROUP_RANK", "0"))
    state_dir = env.get("DESIGNER_RANK_STATE_DIR", "")
    failed = Path(state_dir) / SCRIPT_FAILED if state_dir else None
    restarted = int(env.get("TORCHELASTIC_RESTART_COUNT", "0") or 0) > 0  # (torchrun's count of its restarts)
    if restarted and failed is not None and failed.is_file():  # after an error of the script: not run again
        # (said in torchrun's output, the launchers' log: the rank's own log ends with its error)
        print(f"rank {rank}: not restarted: a process of this job failed of an error of the script "
              f"({failed.read_text(errors='replace')[:300]})", flush=True)
        os._exit(1)
    log_dir = env.get("DESIGNER_RANK_LOG_DIR")
    if log_dir:
        Path(log_dir).mkdir(parents=True, exist_ok=True)
        _redirect_output(Path(log_dir) / layout.driver_log(rank))
    worker = env.get("DESIGNER_WORKER") or socket.gethostname()
    state = _State(state_dir, rank,
                   {"rank": rank, "node_rank": int(env["NODE_RANK"]), "local_rank": int(env.get("LOCAL_RANK", "0")),
                    "node_index": int(env.get("DESIGNER_NODE_INDEX", "0")), "worker": worker, "pid": os.getpid()})
    _start_watcher(state)
    where = (f"node {rank} of {env.get('NODE_COUNT', '1')} (per-node launch: its command starts the node's "
             f"{env.get('PROCESS_COUNT_PER_NODE', '1')} processes)" if per_node else
             f"rank {rank} of {env.get('WORLD_SIZE', '1')} (node {env['NODE_RANK']}, local rank {env.get('LOCAL_RANK', '0')})")
    print(f"{where} on worker {worker}, pid {os.getpid()}; MASTER_ADDR={env.get('MASTER_ADDR', '')} "
          f"MASTER_PORT={env.get('MASTER_PORT', '')}", flush=True)
    if len(sys.argv) < 2:
        sys.exit("usage: python -m supervision.rank MODULE [ARGS...]")
    module, sys.argv = sys.argv[1], [sys.argv[1], *sys.argv[2:]]
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as e:
        if e.code not in (None, 0):
            code = e.code if isinstance(e.code, int) else 1  # sys.exit("text") prints the text and exits 1
            state.write(failed_at=time.time(), reason=f"exited with code {code}")
            _script_failed(state_dir, f"rank {rank} exited with code {code}")
        raise
    except BaseException as e:
        traceback.print_exc()
        state.write(failed_at=time.time(), reason=f"{type(e).__name__}: {e}")
        _script_failed(state_dir, f"rank {rank}: {type(e).__name__}: {e}")
        sys.stdout.flush()
        sys.exit(1)


if __name__ == "__main__":
    main()
