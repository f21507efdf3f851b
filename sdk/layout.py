"""Names of the files a node leaves on disk: one owner for each, used by every writer and reader.

    <node dir>/<output port>/_meta.yaml      the port type and its fields (formats in sdk/formats)
    <node dir>/logs/70_driver_log.txt        the node's log (one process)
    <node dir>/logs/70_driver_log_<rank>.txt one per process of a distributed node
    <node dir>/logs/70_mpi_log.txt           the launchers' log of a distributed node
    <node dir>/devices/rank-<rank>.json      the device each process of a training used (training/devices.py)
    <node dir>/work/checkpoint.pth           a training's last epoch, all it needs to go on (training/train.py)
    <node dir>/work/checkpoints/             a component's own checkpoints ($DESIGNER_CHECKPOINT_DIR)

Both kinds of checkpoint survive a lost worker: in the store with a bucket while the node runs,
brought back for its next attempt; gone once the node ends.
"""
from __future__ import annotations

META_FILE = "_meta.yaml"
LOG_DIR = "logs"
DRIVER_LOG = "70_driver_log.txt"
MPI_LOG = "70_mpi_log.txt"
DRIVER_LOG_PREFIX = "70_driver_log_"
DRIVER_LOG_GLOB = f"{DRIVER_LOG_PREFIX}*.txt"
DEVICES_DIR = "devices"
DEVICES_GLOB = "rank-*.json"
WORK_DIR = "work"
CHECKPOINT_FILE = "checkpoint.pth"
CHECKPOINTS_DIR = "checkpoints"
# what a component's processes find in their environment: where to save and load their own
# checkpoint (kept across attempts: torchrun's elastic contract), and which attempt this is (1 first)
CHECKPOINT_DIR_ENV = "DESIGNER_CHECKPOINT_DIR"
ATTEMPT_ENV = "DESIGNER_ATTEMPT"


def driver_log(rank: int) -> str:
    """The log file name of one process of a distributed node."""
    return f"{DRIVER_LOG_PREFIX}{int(rank)}.txt"


def log_order(names: list[str]) -> list[str]:
    """A node's log files in the order they are offered: the processes' driver logs by rank (rank
    0's first: what a distributed node's script printed), then the node's own log, then the
    launchers' log, then anything else by name."""
    def key(name: str):
        if name.startswith(DRIVER_LOG_PREFIX) and name[len(DRIVER_LOG_PREFIX):-4].isdigit() and name.endswith(".txt"):
            return (0, int(name[len(DRIVER_LOG_PREFIX):-4]), name)
        return ({DRIVER_LOG: 1, MPI_LOG: 2}.get(name, 3), 0, name)
    return sorted(names, key=key)
