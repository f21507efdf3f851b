"""The workers: which are alive, which is this one, which are busy, and reserving one for a node
of a distributed job (one worker = one node; a conditional UPDATE of `Worker.reserved_by`, so
two jobs never share one). Their rows are written by their heartbeat (heartbeat.py)."""
from __future__ import annotations

import socket
from dataclasses import dataclass, field
from datetime import timedelta

from celery import current_task
from django.conf import settings
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from designer.engine import statuses as st
from designer.engine import targets as tg
from designer.pipelines.models import NodeRun, Worker
from sdk.declarations import Machine

INLINE = "inline"  # the name of "this process" when it is no Celery worker (run_pipeline --inline)


def live_workers(target: str | None = None):
    """Workers that sent a heartbeat lately and did not shut down (of compute target `target` only,
    unless None or targets.ANY)."""
    since = timezone.now() - timedelta(seconds=settings.LOST_AFTER_SECONDS)
    live = Worker.objects.filter(last_seen__gte=since, stopped_at__isnull=True)
    return live.filter(compute_target=target) if target else live


def targets() -> dict[str, tg.Target]:
    """The compute targets some worker joined (its row kept, alive or not: a target whose workers
    are all down still exists, and its nodes wait for one), each with its live workers."""
    found = {name: [] for name in Worker.objects.exclude(compute_target="").values_list("compute_target", flat=True).distinct()}
    for w in live_workers().exclude(compute_target="").only("hostname", "cpus", "gpus", "compute_target"):
        # setdefault: a worker may have registered between the two queries
        found.setdefault(w.compute_target, []).append(tg.Member(w.hostname, w.units, w.unit_name))
    return {name: tg.Target(name, tuple(live)) for name, live in found.items()}


def free_slots() -> int:
    """Task slots of the live workers minus the nodes running now."""
    slots = sum(live_workers().values_list("concurrency", flat=True))
    return slots - NodeRun.objects.filter(status=st.RUNNING).count()


def current_name() -> str:
    """The Celery name of the worker running this task, or INLINE outside any task."""
    try:
        name = current_task and current_task.request.hostname
    except Exception:  # no task context at all
        name = None
    return name or INLINE


def current() -> Worker | None:
    """This worker's row (None inline, or before its first heartbeat)."""
    return Worker.objects.filter(hostname=current_name()).first()


def this_process() -> Worker:
    """This worker's row, or an unsaved one describing this process from the settings."""
    return current() or Worker(hostname=current_name(), address=settings.WORKER_ADDRESS, cpus=settings.WORKER_CPUS,
                               gpus=0, machine=socket.gethostname())


def running_node_on(worker_ref=OuterRef("pk")):
    """A subquery: does the worker run a node now (for annotate / filter)?"""
    return Exists(NodeRun.objects.filter(status=st.RUNNING, worker=worker_ref))


def is_busy():
    """A Q over Worker: running a node, or reserved by a distributed node that runs."""
    return running_node_on() | Q(reserved_by__isnull=False, reserved_by__status=st.RUNNING)  # never NULL


@dataclass(frozen=True)
class Hardware:
    """What a worker's heartbeat says besides its units: the compute target it joined, the GPUs
    its machine lists ({index, name, memory_mb}) and why CUDA cannot start on them, if so."""
    compute_target: str = ""
    gpus: list = field(default_factory=list)
    cuda_problem: str = ""
    cache: dict = field(default_factory=dict)  # its cache of the bucket's outputs (artifact_cache.stats()), if any


def beat(hostname: str, cpus: int, gpus: int, concurrency: int, address: str, weights: Machine | None = None,
         hardware: Hardware | None = None) -> None:
    """The worker `hostname` is alive and offers this (its row created, refreshed or revived);
    `weights`: its torch hub folder and the files in it (modules/_machine.py)."""
    hw = hardware or Hardware()
    Worker.objects.update_or_create(hostname=hostname, defaults={
        "cpus": cpus, "gpus": gpus, "concurrency": concurrency, "last_seen": timezone.now(), "address": address,
        "machine": socket.gethostname(), "stopped_at": None,
        "compute_target": hw.compute_target, "gpu_inventory": hw.gpus, "cuda_problem": hw.cuda_problem, "cache": hw.cache,
        "weights": {"folder": weights.weights_folder, "files": sorted(weights.weights)} if weights else {}})


def machines() -> tuple[Machine, ...] | None:
    """The live workers as the modules' pre-flight checks see them (the weights each has), or
    None when none reported (no worker is up: the check looks at this machine, where the
    embedded app runs its worker)."""
    found = tuple(Machine(hostname, w["folder"], frozenset(w["files"]))
                  for hostname, w in live_workers().order_by("hostname").values_list("hostname", "weights")
                  if isinstance(w, dict) and isinstance(w.get("folder"), str) and isinstance(w.get("files"), list))
    return found or None


def stopped(hostname: str) -> None:
    """The worker shut down: no longer live, but its row stays for the nodes that name it."""
    Worker.objects.filter(hostname=hostname).update(stopped_at=timezone.now(), reserved_by=None)


# ---------------------------------------------------------------- reservation


def void_stale_reservations() -> None:
    """Reservations by nodes that no longer run (their worker died mid-job) are void."""
    Worker.objects.filter(reserved_by__isnull=False).exclude(reserved_by__status=st.RUNNING).update(reserved_by=None)


def reserve(worker: Worker, noderun: NodeRun) -> bool:
    """Take `worker` for one node of `noderun`'s job, unless another job holds it."""
    return bool(worker.pk) and Worker.objects.filter(pk=worker.pk, reserved_by__isnull=True).update(reserved_by=noderun) == 1


def release(noderun: NodeRun) -> None:
    Worker.objects.filter(reserved_by=noderun).update(reserved_by=None)
