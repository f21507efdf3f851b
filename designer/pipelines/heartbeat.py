"""Each worker's heartbeat: a thread started when the worker is ready that says the worker is alive
and what it offers (its Worker row: its compute target, cores, GPUs as inventory.py took them at
start), every HEARTBEAT_SECONDS, until the worker shuts down (its row is then marked stopped, not
deleted: the nodes it ran still name it). That is all it does: the periodic work (reaper, outbox,
sweep deadlines, retention) is the maintenance loop's (maintenance.py), whose loop each worker runs in a
second thread, one worker holding its lease at a time. Loaded with the tasks (tasks.py), which
connects it to the worker's signals."""
from __future__ import annotations

import logging
import os
import socket
import sys
import threading

from celery import signals
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import connection

from designer.celery import target_queue
from designer.pipelines import artifact_store, maintenance
from designer.pipelines.compute import inventory, workers
from designer.pipelines.runs import routing
from modules._machine import this_machine
from supervision import gpus, launch

log = logging.getLogger(__name__)
_stop = threading.Event()
_threads: list[threading.Thread] = []
_found: dict[str, inventory.Inventory] = {}  # this worker's hardware, taken once before it consumes


def hardware() -> inventory.Inventory:
    """This worker's GPUs and whether CUDA starts (taken once: GPUs are not plugged in while it runs)."""
    if "it" not in _found:
        _found["it"] = inventory.take()
        if _found["it"].cuda_problem:
            print(f"{_found['it'].cuda_problem}: this worker offers 0 GPUs and runs modules on its CPU cores", flush=True)
    return _found["it"]


def compute_target() -> str:
    return hardware().target(settings.WORKER_COMPUTE_TARGET)


def beat_once(hostname: str, hw: inventory.Inventory, concurrency: int) -> None:
    # what it has for the modules' pre-flight checks (its weights files), listed again at each beat
    workers.beat(hostname, settings.WORKER_CPUS, hw.usable, concurrency, settings.WORKER_ADDRESS, this_machine(hostname),
                 hardware=workers.Hardware(compute_target(), list(hw.listed), hw.cuda_problem, _cache_stats()))


def _cache_stats() -> dict:
    """Its cache of the bucket's outputs: what it holds and how often a node found its inputs there."""
    return artifact_store.cache().stats(recent=routing.CACHE_KEYS_REPORTED) if artifact_store.is_remote() else {}


def heartbeat_loop(hostname: str, concurrency: int) -> None:
    hw = hardware()
    while True:
        try:
            beat_once(hostname, hw, concurrency)
        except Exception as e:  # the database or the broker is away: the next beat tries again
            print(f"heartbeat of {hostname} failed: {e}", flush=True)
            connection.close()
        if _stop.wait(settings.HEARTBEAT_SECONDS):
            break
    workers.stopped(hostname)
    connection.close()


@signals.celeryd_after_setup.connect
def _consume_target_queue(sender, instance, **kwargs):
    # a store it cannot read or write (no such bucket, refused credentials, unreachable): it does not start
    try:
        artifact_store.check_at_start()
    except ImproperlyConfigured as e:
        print(f"{e}. This worker does not start.", file=sys.stderr, flush=True)
        raise SystemExit(78) from None  # (EX_CONFIG; a signal handler's Exception would only be logged)
    # before the worker consumes: the nodes of its compute target are sent to the target's queue
    instance.app.amqp.queues.select_add(target_queue(compute_target()))
    # the worker's name, as the Compute page shows it, for what its pool processes run: a training
    # records the device it used on this worker (training/devices.py), as distributed ranks do
    os.environ["DESIGNER_WORKER"] = sender
    # the GPUs its jobs share with every worker of this machine, each held by one job at a time (supervision/gpus.py)
    os.environ[gpus.MACHINE_GPUS_ENV] = str(hardware().usable)
    # each of its slots gets its share of the cores for torch's threads (a distributed job's ranks get
    # theirs from the launcher: launchers/specs.py), unless OMP_NUM_THREADS was given to the worker
    os.environ.setdefault("OMP_NUM_THREADS", str(launch.slot_threads(settings.WORKER_CPUS, getattr(instance, "concurrency", 1) or 1)))


@signals.worker_ready.connect
def _start_heartbeat(sender, **kwargs):
    hostname = sender.hostname or socket.gethostname()
    concurrency = getattr(sender.controller, "concurrency", 1) if hasattr(sender, "controller") else 1
    _threads[:] = [threading.Thread(target=heartbeat_loop, args=(hostname, concurrency or 1), daemon=True, name="designer-heartbeat"),
                   threading.Thread(target=maintenance.run_forever, args=(hostname, _stop), daemon=True, name="designer-maintenance")]
    for t in _threads:
        t.start()


@signals.worker_shutdown.connect
def _stop_heartbeat(**kwargs):
    _stop.set()
    for t in _threads:  # the row says "stopped" and the maintenance lease is given up before the process ends
        t.join(5)
