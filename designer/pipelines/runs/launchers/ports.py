"""The rendezvous port at node 0: the first free one of DISTRIBUTED_PORTS (0: any free port).

Free means nobody listens on it AND no other job of this machine has claimed it: between the
probe and torchrun's own bind there are seconds, and two jobs starting together on one machine
(two trials of a sweep) would otherwise both pick the first free port and one rendezvous would
fail. A claim is an exclusive lock on a file named after the port, held while the job runs
(released when the launcher closes it, or when its process ends)."""
from __future__ import annotations

import fcntl
import socket
import tempfile
from pathlib import Path

from django.conf import settings

from designer.engine.executor import DistributedLaunchError
from designer.pipelines.runs.launchers import explain
from designer.pipelines.runs.launchers.gang import Gang


class PortClaim:
    def __init__(self, port: int, handle=None):
        self.port, self._handle = port, handle

    def release(self) -> None:
        if self._handle is not None:
            self._handle.close()  # closing the file drops its lock
            self._handle = None


def _claim(port: int):
    """An open file locked for `port`, or None when another job of this machine holds it."""
    handle = (Path(tempfile.gettempdir()) / f"pipeline-designer-rendezvous-{port}.lock").open("a")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        return None
    return handle


def pick_port(gang: Gang) -> PortClaim:
    for port in settings.DISTRIBUTED_PORTS:
        handle = _claim(port) if port else None
        if port and handle is None:
            gang.say(f"port {port} is claimed by another job starting on this machine")
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # TIME_WAIT is no obstacle; a listener is
            try:
                probe.bind(("", port))
            except OSError as e:
                gang.say(f"port {port} is in use on {gang.me.hostname}: {e.strerror}")
                if handle is not None:
                    handle.close()
                continue
            return PortClaim(probe.getsockname()[1], handle)
    raise DistributedLaunchError(explain.ports_in_use(gang, settings.DISTRIBUTED_PORTS))
