"""The maintenance loop, the periodic work of the whole installation: failing the nodes of lost workers, sending what the broker
refused or lost (the outbox), ending sweeps past their deadline, re-sending model packaging, and
collecting the folders of deleted runs.

Exactly one process does it at a time: the holder of the `maintenance` lease (a Lease row, taken
and renewed by a conditional UPDATE). Every Celery worker runs `run_forever` in a thread
(heartbeat.py starts it), and `manage.py maintenance` runs it as a process of its own for a
deployment that wants one with no worker up; whichever asks first holds it, the others wait. A
holder that dies (killed, crashed, its machine unplugged) stops renewing: after
MAINTENANCE_LEASE_SECONDS the next process to ask takes over, and since every job works from what
the database says (conditional transitions, idempotent sends), nothing is lost or done twice.

A worker's heartbeat only says that the worker is alive; requests (a page's GET) never write.
"""
from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import connection
from django.db.models import Q
from django.utils import timezone

from designer.pipelines.models import Lease
from designer.pipelines.registry import service as registry
from designer.pipelines.runs import outbox, retention
from designer.pipelines.runs import service as runs
from designer.pipelines.sweeps import service as sweeps

log = logging.getLogger(__name__)
LEASE = "maintenance"


@dataclass
class Job:
    name: str
    do: Callable[[], object]
    every: float  # seconds between two runs of it
    last: float = float("-inf")


def jobs() -> list[Job]:
    tick = settings.MAINTENANCE_SECONDS
    return [
        Job("fail the nodes of lost workers", runs.reap_lost_nodes, tick),
        Job("send what the broker refused or lost", outbox.send, tick),
        Job("end sweeps past their deadline, move on those whose trial's end went unnoticed", sweeps.tick, tick),
        Job("send again the packaging of registered versions", registry.resend_preparing, tick),
        Job("collect the folders of deleted runs", retention.collect, max(tick, settings.RETENTION_SECONDS)),
    ]


def default_holder() -> str:
    return f"maintenance@{socket.gethostname()}:{os.getpid()}"


def hold(holder: str, seconds: float | None = None) -> bool:
    """Take or renew the lease for `holder`; False while another live holder has it."""
    now = timezone.now()
    until = now + timedelta(seconds=seconds if seconds is not None else settings.MAINTENANCE_LEASE_SECONDS)
    if Lease.objects.filter(name=LEASE).filter(Q(holder=holder) | Q(expires_at__lt=now)).update(holder=holder, expires_at=until):
        return True
    _, created = Lease.objects.get_or_create(name=LEASE, defaults={"holder": holder, "expires_at": until})
    return created


def release(holder: str) -> None:
    """Give the lease up (a holder shutting down): the next process to ask takes it at once."""
    Lease.objects.filter(name=LEASE, holder=holder).update(expires_at=timezone.now() - timedelta(seconds=1))


def holder_now() -> str | None:
    """Who holds the lease now (None when it lapsed or was never taken): the Compute page says it."""
    lease = Lease.objects.filter(name=LEASE, expires_at__gte=timezone.now()).first()
    return lease.holder if lease else None


def run_due(todo: list[Job], now: float | None = None) -> None:
    """Run the jobs whose time has come; one failing does not keep the others from running."""
    now = time.monotonic() if now is None else now
    for job in todo:
        if now - job.last < job.every:
            continue
        job.last = now
        try:
            job.do()
        except Exception as e:  # the database or the broker is away: the next tick tries again
            print(f"maintenance: {job.name} failed: {e}", flush=True)
            connection.close()


def run_forever(holder: str, stop: threading.Event) -> None:
    """Until `stop` is set: every MAINTENANCE_SECONDS, take or renew the lease and, holding it, run
    the jobs that are due."""
    todo = jobs()
    held = False
    try:
        while True:
            try:
                held = hold(holder)
            except Exception as e:
                print(f"maintenance {holder} could not reach the database: {e}", flush=True)
                connection.close()
                held = False
            if held:
                run_due(todo)
            if stop.wait(settings.MAINTENANCE_SECONDS):
                break
    finally:
        if held:
            try:
                release(holder)
            except Exception:  # the database is away: the lease lapses by itself
                pass
        connection.close()
