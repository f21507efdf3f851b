"""Each worker's heartbeat: a thread started when the worker is ready that says what the worker
offers (its Worker row), fails the nodes of lost workers and sends what the outbox owes, every
HEARTBEAT_SECONDS, until the worker shuts down (its row is then marked stopped, not deleted:
the nodes it ran still name it). Loaded with the tasks (tasks.py), which connects it to the
worker's signals."""
from __future__ import annotations

import logging
import shutil
import socket
import subprocess
import threading

from celery import signals
from django.conf import settings
from django.db import connection

from designer.pipelines import outbox, registry, retention, runs, sweeps, workers
from modules._machine import this_machine

log = logging.getLogger(__name__)
_stop = threading.Event()


def gpu_count() -> int:
    # without importing torch in the worker's main process (seconds and hundreds of MB)
    if not shutil.which("nvidia-smi"):
        return 0
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return sum(1 for line in out.splitlines() if line.startswith("GPU "))


def beat_once(hostname: str, gpus: int, concurrency: int) -> None:
    # what it has for the modules' pre-flight checks (its weights files), listed again at each beat
    workers.beat(hostname, settings.WORKER_CPUS, gpus, concurrency, settings.WORKER_ADDRESS, this_machine(hostname))
    runs.reap_lost_nodes()
    outbox.send()  # messages the broker refused or lost: any live worker sends them again
    sweeps.tick()  # sweeps past their deadline end; a sweep whose trial's end went unnoticed moves on
    registry.resend_preparing()  # registered versions whose packaging message the broker did not take
    retention.collect()  # the folders of deleted runs that no other run reuses


def heartbeat_loop(hostname: str, concurrency: int) -> None:
    gpus = gpu_count()
    while True:
        try:
            beat_once(hostname, gpus, concurrency)
        except Exception as e:  # the database or the broker is away: the next beat tries again
            print(f"heartbeat of {hostname} failed: {e}", flush=True)
            connection.close()
        if _stop.wait(settings.HEARTBEAT_SECONDS):
            break
    workers.stopped(hostname)
    connection.close()


@signals.worker_ready.connect
def _start_heartbeat(sender, **kwargs):
    hostname = sender.hostname or socket.gethostname()
    concurrency = getattr(sender.controller, "concurrency", 1) if hasattr(sender, "controller") else 1
    threading.Thread(target=heartbeat_loop, args=(hostname, concurrency or 1), daemon=True, name="designer-heartbeat").start()


@signals.worker_shutdown.connect
def _stop_heartbeat(**kwargs):
    _stop.set()
