"""One process of a distributed job, as torchrun starts it:

    python -m training.rank MODULE ARGS...      (RANK, WORLD_SIZE, LOCAL_RANK, GROUP_RANK from torchrun)

Sends its own output (stdout and stderr, so a traceback lands at its end) to
`$DESIGNER_RANK_LOG_DIR/70_driver_log_<RANK>.txt`, records its node and, when it fails, the time
(`$DESIGNER_RANK_STATE_DIR/rank-<RANK>.json`: the launcher names the first rank that failed),
then runs `python -m MODULE ARGS...`. It dies with torchrun (PR_SET_PDEATHSIG): a killed worker
leaves no training process behind.
"""
from __future__ import annotations

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
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data))
        os.replace(tmp, self.path)


def main() -> None:
    _die_with_parent()
    env = os.environ
    rank = int(env.get("RANK", "0"))
    # torchrun calls the node's rank GROUP_RANK; the designer's reference says NODE_RANK
    env.setdefault("NODE_RANK", env.get("GROUP_RANK", "0"))
    log_dir = env.get("DESIGNER_RANK_LOG_DIR")
    if log_dir:
        Path(log_dir).mkdir(parents=True, exist_ok=True)
        _redirect_output(Path(log_dir) / f"70_driver_log_{rank}.txt")
    worker = env.get("DESIGNER_WORKER") or socket.gethostname()
    state = _State(env.get("DESIGNER_RANK_STATE_DIR", ""), rank,
                   {"rank": rank, "node_rank": int(env["NODE_RANK"]), "local_rank": int(env.get("LOCAL_RANK", "0")),
                    "node_index": int(env.get("DESIGNER_NODE_INDEX", "0")), "worker": worker, "pid": os.getpid()})
    print(f"rank {rank} of {env.get('WORLD_SIZE', '1')} (node {env['NODE_RANK']}, local rank {env.get('LOCAL_RANK', '0')}) "
          f"on worker {worker}, pid {os.getpid()}; MASTER_ADDR={env.get('MASTER_ADDR', '')} "
          f"MASTER_PORT={env.get('MASTER_PORT', '')}", flush=True)
    if len(sys.argv) < 2:
        sys.exit("usage: python -m training.rank MODULE [ARGS...]")
    module, sys.argv = sys.argv[1], [sys.argv[1], *sys.argv[2:]]
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as e:
        if e.code not in (None, 0):
            state.write(failed_at=time.time(), reason=f"exit code {e.code}")
        raise
    except BaseException as e:
        traceback.print_exc()
        state.write(failed_at=time.time(), reason=f"{type(e).__name__}: {e}")
        sys.stdout.flush()
        sys.exit(1)


if __name__ == "__main__":
    main()
