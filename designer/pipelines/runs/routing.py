"""Which worker gets a node's message: a node whose pipeline names a compute target goes to that
target's workers only (their queue, designer/celery.py target_queue), a distributed node to a
worker that can be its node 0, and a node whose module needs something only some workers have to
one of them.

The worker that takes a distributed node's task is its node 0, and node 0 must offer Process
count per node units (GPUs, or else CPU cores). What a module needs of a machine is what its
pre-flight check says (Module.preflight: a pretrained ResNet needs its weights file in the
worker's torch hub folder, as the worker's heartbeat reports it); validation makes sure one live
worker has it, routing sends the node there."""
from __future__ import annotations

from django.conf import settings
from django.db.models import Case, Count, F, OuterRef, Q, Subquery, When
from django.db.models.functions import Coalesce
from kombu.exceptions import OperationalError

from designer.celery import RUN_NODE, app, host_queue, target_queue
from designer.engine import statuses as st
from designer.pipelines import artifact_store
from designer.pipelines.catalogue.service import get_catalogue
from designer.pipelines.compute import workers
from designer.pipelines.models import NodeRun, Run, Worker
from designer.pipelines.runs import artifacts
from designer.pipelines.runs.rungraph import run_graph
from sdk.declarations import Machine, Module


def _module_of(nr: NodeRun) -> type[Module] | None:
    builtin = get_catalogue().get(nr.kind)  # built-in and settings-folder kinds: no query
    if builtin is not None:
        return builtin
    node = _node_of(nr)
    return get_catalogue(_run_of(nr).owner_id).for_node(node) if node else None


def is_distributed(nr: NodeRun) -> bool:
    module = _module_of(nr)
    return bool(module and module.distributed)


def checks_machines(module: type[Module] | None) -> bool:
    """Does the module say what a machine must have to run it (its own Module.preflight)?"""
    return module is not None and module.preflight.__func__ is not Module.preflight.__func__


def _split(nr: NodeRun) -> tuple[list[Machine], list[tuple[str, str]]] | None:
    """The live workers that have what the node's module needs (its pre-flight check passes on
    each alone), and (worker, reason) for the others; None when that makes no difference: the
    module needs nothing of a machine, every live worker has it, or none has (the worker that
    takes it then says what is missing). No query for a module that needs nothing of a machine."""
    module = _module_of(nr)
    if not checks_machines(module):
        return None
    machines = workers.machines()
    node = _node_of(nr)
    if not machines or node is None:
        return None
    params = module.resolved_params(node.get("parameters", {}))
    fit, unfit = [], []
    for m in machines:
        problems = module.preflight(params, (m,))
        if problems:
            unfit.append((m.name, problems[0][1]))
        else:
            fit.append(m)
    return (fit, unfit) if fit and unfit else None


def machines_for(nr: NodeRun) -> frozenset[str] | None:
    """The names of the live workers that can run the node when only some can (_split), else None."""
    split = _split(nr)
    return frozenset(m.name for m in split[0]) if split else None


def _run_of(nr: NodeRun) -> Run:
    # the run's DAG is kept per process: the snapshot (megabytes for a big pipeline) is read once
    if not NodeRun.run.is_cached(nr):
        nr.run = Run.objects.defer("snapshot").get(pk=nr.run_id)  # once per call of route_for and the others
    return nr.run


def _node_of(nr: NodeRun) -> dict | None:
    return run_graph(_run_of(nr)).nodes.get(nr.node_id)


def target_of(nr: NodeRun) -> str:
    """The compute target the node runs on ('' for any worker); no query once the run's DAG is read."""
    return run_graph(_run_of(nr)).compute.get(nr.node_id, "")


def run_settings_of(nr: NodeRun) -> tuple[int, int]:
    """(Node count, Process count per node) of a node; (1, 1) for a module that is not distributed."""
    if not is_distributed(nr):
        return 1, 1
    rs = _node_of(nr).get("run_settings") or {}
    return int(rs.get("node_count", 1)), int(rs.get("process_count_per_node", 1))


def only_on(nr: NodeRun) -> str:
    """Why a queued node waits for some workers only, in words ('' when any worker can run it):
    the workers it goes to, and what the module's pre-flight check says of one of the others; that
    no worker of its compute target is alive."""
    target = target_of(nr)
    if target and not workers.live_workers(target).exists():
        return (f"waits for a worker of compute target {target}: none is alive. It starts when one joins the target "
                f"(a worker started with WORKER_COMPUTE_TARGET={target}); the Compute page lists the targets and their workers")
    split = _split(nr)
    if split is None:
        return ""
    fit, unfit = split
    names = ", ".join(sorted(m.name for m in fit))
    return (f"runs only on {'worker' if len(fit) == 1 else 'workers'} {names}, and starts when "
            f"{'it has' if len(fit) == 1 else 'one has'} a free slot; not elsewhere: {unfit[0][1]}")


def route_for(nr: NodeRun) -> dict:
    """The send options of the `run_node` message of `nr`.

    A node of a compute target goes to the target's queue, which only its workers consume. A
    distributed node other than 1 x 1 goes to the own queue of a live worker (of its target) that
    can be its node 0, and a node that needs what only some workers have (machines_for) to one of
    those; among them an idle one is preferred (not reserved by a job and running no node), then
    one whose CUDA started, then the one with the fewest units that fit (the big ones stay free for
    the big jobs). `{}` (any worker) for any other node, and when no live worker fits (the target's
    queue for a node of a target): the worker that takes it then explains why it cannot start.
    One query for a distributed node (two when `nr.run` is not loaded; a third, once per run and
    process, for the DAG), none for a node that fits any worker."""
    n, p = run_settings_of(nr)
    only = machines_for(nr)
    target = target_of(nr)
    anywhere = {"queue": target_queue(target)} if target else {}
    if n * p == 1 and only is None:
        near = nearest(nr, target)
        return {"queue": host_queue(near)} if near else anywhere
    fit = workers.live_workers(target)
    if n * p > 1:
        fit = fit.filter(Q(gpus__gte=p) | Q(gpus=0, cpus__gte=p))
    if only is not None:
        fit = fit.filter(hostname__in=only)
    best = (fit.annotate(busy=Q(reserved_by__isnull=False) | workers.running_node_on(),
                         units=Case(When(gpus__gt=0, then="gpus"), default="cpus"), cuda_failed=~Q(cuda_problem=""))
            .order_by("busy", "cuda_failed", "units", "hostname").values_list("hostname", flat=True).first())
    return {"queue": host_queue(best)} if best else anywhere


CACHE_KEYS_REPORTED = 200  # the most recently used trees each worker's heartbeat lists


def nearest(nr: NodeRun, target: str) -> str | None:
    """With a bucket store: the live worker of `target` with a free slot that caches most of the
    node's inputs (the worker that wrote an input keeps it; the others list theirs in their
    heartbeat), or None (none caches any: any worker fetches them). A 5 GB dataset is then not
    downloaded again by the next node, nor by the next trial of a sweep."""
    if not artifact_store.is_remote():
        return None
    keys = artifacts.input_keys(nr)
    if not keys:
        return None
    running = (NodeRun.objects.filter(status=st.RUNNING, worker=OuterRef("pk")).order_by()
               .values("worker").annotate(n=Count("pk")).values("n"))
    free = (workers.live_workers(target).filter(reserved_by__isnull=True)
            .annotate(running=Coalesce(Subquery(running), 0)).filter(running__lt=F("concurrency")))
    score: dict[str, int] = {}
    for hostname, cache in free.values_list("hostname", "cache"):
        listed = cache.get("keys") if isinstance(cache, dict) and isinstance(cache.get("keys"), dict) else {}
        score[hostname] = sum(int(listed[k]) + 1 for k in keys if isinstance(listed.get(k), int))
    # the worker that wrote an input has it (its heartbeat may not have said so yet)
    made = [tuple(k.split("/")[:2]) for k in keys if k.split("/")[0].isdigit()]
    if made and score:
        where = Q()
        for run_id, node_id in made:
            where |= Q(run_id=int(run_id), node_id=node_id)
        for hostname in NodeRun.objects.filter(where, worker__hostname__in=list(score)).values_list("worker__hostname", flat=True):
            score[hostname] += 1
    best = max(score.items(), key=lambda item: (item[1], item[0]), default=(None, 0))
    return best[0] if best[1] > 0 else None


def forward_if_unfit(nr: NodeRun, worker_name: str) -> bool:
    """Called by a worker that picked up `nr` before claiming it: if this worker cannot run it
    (it is not of the node's compute target; it cannot be the node 0 of a distributed node: fewer
    units than Process count per node; or it lacks what the module needs, machines_for) and a live
    worker can, send the node's task on to that worker (or to the target's queue) and return True
    (this worker must leave the node alone: it stays queued, and is claimed by the worker it was
    sent to). False otherwise, and always inline: this worker goes on (and, if it cannot run the
    node, fails it saying why)."""
    n, p = run_settings_of(nr)
    only = machines_for(nr)
    target = target_of(nr)
    if (n * p == 1 and only is None and not target) or worker_name == workers.INLINE:
        return False
    me = Worker.objects.filter(hostname=worker_name).first()
    mine = not target or (me is not None and me.compute_target == target)
    if mine and (only is None or worker_name in only):
        if n * p == 1 or (me.units if me else settings.WORKER_CPUS) >= p:
            return False
    route = route_for(nr)
    # nowhere better: a worker of the target goes on (and says why it cannot), never back to its own queue
    if not route or route["queue"] == host_queue(worker_name) or (mine and route["queue"] == target_queue(target)):
        return False
    try:
        app.send_task(RUN_NODE, args=[nr.pk], **route)
    except OperationalError:
        pass  # the broker is away: the node stays queued, and the outbox sends it again
    return True
