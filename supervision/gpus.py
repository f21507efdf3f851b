"""The GPUs of this machine, each used by one job at a time, as the original gives a job its GPUs.

A worker runs several tasks at once (its concurrency), and a machine may hold several workers:
without a rule, every 1 x 1 training took GPU 0 and every distributed job GPUs 0 .. P-1, side by
side with the others. A job now holds a lease on the GPUs it uses: one lock file per GPU index
(fcntl.flock, in LOCK_DIR on this machine's own disk), held while the job runs and released by
the kernel when its holder ends, however it ends (a killed worker leaks none).

    with gpus.lease(1, say=ctx.log, check_cancelled=ctx.check_cancelled) as held:   # [2]
        ...                                   # this job's GPU is held.indexes[0]

How many GPUs the machine has: MACHINE_GPUS_ENV, which a worker sets at start from its inventory
(designer/pipelines/heartbeat.py, nvidia-smi and CUDA); unset or 0: no GPU, nothing to lease.
Torch-free: the engine, the launchers and the modules use it.
"""
from __future__ import annotations

import fcntl
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from sdk.context import GPU_ENV  # noqa: F401 - gpus.GPU_ENV: the GPU a 1 x 1 job in the worker's process holds

MACHINE_GPUS_ENV = "DESIGNER_MACHINE_GPUS"  # how many GPUs this machine's workers share
LOCK_DIR_ENV = "DESIGNER_GPU_LOCK_DIR"
POLL_SECONDS = 0.5


class NoFreeGPU(RuntimeError):
    pass


def machine_gpus() -> int:
    try:
        return max(0, int(os.environ.get(MACHINE_GPUS_ENV, "0")))
    except ValueError:
        return 0


def lock_dir() -> Path:
    """Where the locks are: this machine's temporary folder (never shared storage), one per user."""
    return Path(os.environ.get(LOCK_DIR_ENV) or Path(tempfile.gettempdir()) / f"designer-gpus-{os.getuid()}")


def physical(index: int) -> str:
    """The machine's name of this process's GPU `index`: its CUDA_VISIBLE_DEVICES entry, if set (two
    workers given different GPUs lock different files), else the index."""
    visible = [v.strip() for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
    return visible[index] if index < len(visible) else str(index)


class Lease:
    """GPUs held by this process until release() (or its end)."""

    def __init__(self, indexes: list[int], files: list[int]):
        self.indexes = indexes
        self._files = files

    @property
    def visible_devices(self) -> str:
        """CUDA_VISIBLE_DEVICES for a child process that uses exactly these GPUs."""
        return ",".join(physical(i) for i in self.indexes)

    def release(self) -> None:
        for fd in self._files:
            os.close(fd)  # closing the file drops its lock
        self._files = []

    def __enter__(self) -> Lease:
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def try_lease(count: int, total: int | None = None) -> Lease | None:
    """`count` free GPUs of the machine's `total` (default: machine_gpus()), lowest indexes first,
    or None (none taken) when fewer are free."""
    total = machine_gpus() if total is None else total
    folder = lock_dir()
    folder.mkdir(parents=True, exist_ok=True)
    indexes: list[int] = []
    files: list[int] = []
    for index in range(total):
        if len(indexes) == count:
            break
        fd = os.open(folder / f"gpu-{physical(index)}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)  # another job's
            continue
        indexes.append(index)
        files.append(fd)
    if len(indexes) < count:
        Lease(indexes, files).release()
        return None
    return Lease(indexes, files)


def lease(count: int, total: int | None = None, say: Callable[[str], None] = print,
          check_cancelled: Callable[[], None] = lambda: None, wait: float = float("inf")) -> Lease:
    """`count` GPUs of this machine, waiting while other jobs hold them (saying so once), up to
    `wait` seconds (then NoFreeGPU); check_cancelled() is called while it waits."""
    total = machine_gpus() if total is None else total
    if count > total:
        raise NoFreeGPU(f"{count} GPU(s) asked for, but this machine has {total}")
    deadline = time.monotonic() + wait
    said = False
    while (held := try_lease(count, total)) is None:
        if not said:
            say(f"waiting for {count} of this machine's {total} GPU(s): other jobs are using them")
            said = True
        if time.monotonic() >= deadline:
            raise NoFreeGPU(f"{count} of this machine's {total} GPU(s) were not free within {wait:g} s: other jobs use them")
        check_cancelled()
        time.sleep(POLL_SECONDS)
    return held
