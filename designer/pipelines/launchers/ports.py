"""The rendezvous port at node 0: the first free one of DISTRIBUTED_PORTS (0: any free port)."""
from __future__ import annotations

import socket

from django.conf import settings

from designer.engine.executor import DistributedLaunchError
from designer.pipelines.launchers import explain
from designer.pipelines.launchers.gang import Gang


def pick_port(gang: Gang) -> int:
    for port in settings.DISTRIBUTED_PORTS:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # TIME_WAIT is no obstacle; a listener is
            try:
                probe.bind(("", port))
            except OSError as e:
                gang.say(f"port {port} is in use on {gang.me.hostname}: {e.strerror}")
                continue
            return probe.getsockname()[1]
    raise DistributedLaunchError(explain.ports_in_use(gang, settings.DISTRIBUTED_PORTS))
