"""Which worker gets a node's message: a distributed node goes to a worker that can be its node 0.

The worker that takes a distributed node's task is its node 0, and node 0 must offer Process
count per node units (GPUs, or else CPU cores)."""
from __future__ import annotations

from django.conf import settings
from django.db.models import Case, Q, When
from kombu.exceptions import OperationalError

from designer.celery import RUN_NODE, app, host_queue
from designer.pipelines import workers
from designer.pipelines.catalogue import get_catalogue
from designer.pipelines.models import NodeRun, Run, Worker
from designer.pipelines.rungraph import run_graph


def is_distributed(nr: NodeRun) -> bool:
    builtin = get_catalogue().get(nr.kind)  # built-in and settings-folder kinds: no query
    if builtin is not None:
        return builtin.distributed
    node = _node_of(nr)
    module = get_catalogue(_run_of(nr).owner_id).for_node(node) if node else None
    return bool(module and module.distributed)


def _run_of(nr: NodeRun) -> Run:
    # the run's DAG is kept per process: the snapshot (megabytes for a big pipeline) is read once
    return nr.run if NodeRun.run.is_cached(nr) else Run.objects.defer("snapshot").get(pk=nr.run_id)


def _node_of(nr: NodeRun) -> dict | None:
    return run_graph(_run_of(nr)).nodes.get(nr.node_id)


def run_settings_of(nr: NodeRun) -> tuple[int, int]:
    """(Node count, Process count per node) of a node; (1, 1) for a module that is not distributed."""
    if not is_distributed(nr):
        return 1, 1
    rs = _node_of(nr).get("run_settings") or {}
    return int(rs.get("node_count", 1)), int(rs.get("process_count_per_node", 1))


def route_for(nr: NodeRun) -> dict:
    """The send options of the `run_node` message of `nr`.

    A distributed node other than 1 x 1 goes to the own queue of a live worker that can be its
    node 0, preferring one that is idle (not reserved by a job and running no node), then the one
    with the fewest units that fit (the big ones stay free for the big jobs). `{}` (any worker)
    for any other node, and when no live worker can ever be node 0: the worker that takes it then
    explains why it cannot start. One query (two when `nr.run` is not loaded; a third, once per
    run and process, for the DAG)."""
    n, p = run_settings_of(nr)
    if n * p == 1:
        return {}
    fit = (workers.live_workers().filter(Q(gpus__gte=p) | Q(gpus=0, cpus__gte=p))
           .annotate(busy=Q(reserved_by__isnull=False) | workers.running_node_on(),
                     units=Case(When(gpus__gt=0, then="gpus"), default="cpus"))
           .order_by("busy", "units", "hostname").values_list("hostname", flat=True))
    best = fit.first()
    return {"queue": host_queue(best)} if best else {}


def forward_if_unfit(nr: NodeRun, worker_name: str) -> bool:
    """Called by a worker that picked up `nr` before claiming it: if `nr` is distributed, this
    worker cannot be its node 0 (fewer units than Process count per node) and a live worker
    can, send the node's task on to that worker and return True (this worker must leave the
    node alone: it stays queued, and is claimed by the worker it was sent to). False otherwise:
    this worker goes on (and, if it cannot be node 0, fails the node saying why)."""
    n, p = run_settings_of(nr)
    if n * p == 1:
        return False
    me = Worker.objects.filter(hostname=worker_name).first()
    if (me.units if me else settings.WORKER_CPUS) >= p:
        return False
    route = route_for(nr)
    if not route or route["queue"] == host_queue(worker_name):
        return False
    try:
        app.send_task(RUN_NODE, args=[nr.pk], **route)
    except OperationalError:
        pass  # the broker is away: the node stays queued, and the outbox sends it again
    return True
