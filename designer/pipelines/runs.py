"""Runs: submit, advance, execute a node, cancel, reap nodes whose worker was lost.

The decisions come from the plain-Python engine (scheduler, cache, executor); this file stores
them. `advance()` is called after every change and is safe to call from several workers at
once: each transition is a conditional UPDATE that only one caller can win.
"""
from __future__ import annotations

import ctypes
import socket
import threading
from collections import OrderedDict
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from designer.engine import cache, executor, graph, paths
from designer.engine import scheduler as s
from designer.pipelines import datasets, events, gang, outbox
from designer.pipelines.catalogue import get_catalogue
from designer.pipelines.models import NodeRun, Run, Worker

# ---------------------------------------------------------------- submit


def submit(owner, doc: dict, pipeline=None, name: str | None = None, regenerate: set[str] | bool = False,
           inline: bool = False) -> Run:
    """Freeze the document into a Run and hand its first nodes to the workers (or, with
    `inline`, run every node in this process through the same engine).

    Raises graph.PipelineInvalid (every problem) when the document cannot run.
    """
    doc = graph.check(graph.upgrade(doc), get_catalogue())
    doc = datasets.bind(owner, doc)  # a Dataset node may only read its owner's file
    if regenerate:
        for node in doc["nodes"]:
            if regenerate is True or node["id"] in regenerate:
                node["regenerate_output"] = True
    with transaction.atomic():
        run = Run.objects.create(owner=owner, pipeline=pipeline, name=name or doc.get("name") or "pipeline", snapshot=doc)
        NodeRun.objects.bulk_create(NodeRun(run=run, node_id=n["id"], kind=n["kind"]) for n in doc["nodes"])
    if inline:
        run_inline(run.id)
    else:
        dispatch(advance(run.id))
    return run


def dispatch(noderun_ids: list[int]) -> None:
    """Send the messages of these newly queued nodes now. The outbox owes them already (advance()
    stored that with the move to queued): when the broker is down, nothing is lost and the run
    starts when it is back (outbox.py)."""
    if noderun_ids:
        outbox.send(noderun_ids)


def run_inline(run_id: int) -> None:
    """Run the run's nodes in this process, through the same engine (headless `--inline`).
    A node that a worker claims first is left to the worker."""
    todo = list(NodeRun.objects.filter(run_id=run_id, status=s.QUEUED).values_list("id", flat=True)) + advance(run_id)
    while todo:
        todo += execute_noderun(todo.pop(0))


# ---------------------------------------------------------------- advance

_graphs: OrderedDict[tuple, s.RunGraph] = OrderedDict()
_graphs_lock = threading.Lock()


def run_graph(run: Run) -> s.RunGraph:
    """The run's DAG, indexed. A snapshot never changes, so each process parses it once per run
    (a 5,000-node snapshot is megabytes of JSON: not something to read per finished node)."""
    key = (run.pk, run.submitted_at)
    with _graphs_lock:
        g = _graphs.get(key)
        if g is not None:
            _graphs.move_to_end(key)
            return g
    g = s.RunGraph.of(Run.objects.values_list("snapshot", flat=True).get(pk=run.pk))
    with _graphs_lock:
        _graphs[key] = g
        while len(_graphs) > 32:
            _graphs.popitem(last=False)
    return g


def advance(run_id: int, changed: list[str] | None = None) -> list[int]:
    """Apply the scheduler's decisions after the nodes `changed` changed (None: look at every
    node); return the NodeRun ids newly queued, whose messages the outbox now owes.

    Only the changed nodes' neighbourhood is read, so a finished node costs the same in a
    5-node and a 5,000-node pipeline."""
    queued: list[int] = []
    with transaction.atomic():
        run = Run.objects.select_for_update().defer("snapshot").get(pk=run_id)
        if run.finished:
            return []
        g = run_graph(run)
        catalogue = get_catalogue()
        changed = None if changed is None else list(changed)
        while changed is None or changed:
            if changed is None:
                nodes = {nr.node_id: nr for nr in NodeRun.objects.filter(run_id=run_id).order_by()}
                frontier = list(g.nodes)
            else:
                status = dict(NodeRun.objects.filter(run_id=run_id, node_id__in=changed).order_by().values_list("node_id", "status"))
                nodes = {nr.node_id: nr for nr in NodeRun.objects.filter(run_id=run_id, node_id__in=g.affected_by(changed, status)).order_by()}
                frontier = [c for node in changed for c in g.children[node]]
            decision = s.next_steps(g, {k: nr.status for k, nr in nodes.items()}, frontier)
            changed = []
            now = timezone.now()
            for node_id in decision.not_run:
                _transition(nodes[node_id], s.PENDING, s.NOT_RUN, finished_at=now)
            for node_id in decision.ready:
                nr = nodes[node_id]
                reused = _queue_or_reuse(run, g, catalogue, nr, nodes)
                if reused:
                    changed.append(node_id)
                elif nr.status == s.QUEUED:
                    queued.append(nr.id)
        of_run = NodeRun.objects.filter(run_id=run_id).order_by()  # no ordering: no join with Run
        if run.status == "queued" and of_run.exclude(status=s.PENDING).exists():
            run.status, run.started_at = "running", timezone.now()
            run.save(update_fields=["status", "started_at"])
        if not of_run.filter(status__in=(s.PENDING, s.QUEUED, s.RUNNING)).exists():
            statuses = of_run.exclude(status__in=s.SUCCEEDED).values_list("status", flat=True).distinct()
            run.status, run.finished_at = s.outcome(statuses), timezone.now()
            run.save(update_fields=["status", "finished_at"])
            events.record(run.id, executor.Event("run_finished", "", {"status": run.status}))
    return queued


def _queue_or_reuse(run: Run, g: s.RunGraph, catalogue, nr: NodeRun, nodes: dict[str, NodeRun]) -> bool:
    """Reuse an earlier identical output (True), or queue the node with its message owed."""
    node = g.nodes[nr.node_id]
    module = catalogue.get(node["kind"])
    inputs = {port: nodes[up].output_ids[out] for port, (up, out) in g.inputs[nr.node_id].items()}
    run_settings = {"node_count": 1, "process_count_per_node": 1, **node.get("run_settings", {})} if module.distributed else None
    key = cache.cache_key(module.kind, module.version, module.resolved_params(node.get("parameters", {})), inputs, run_settings)
    earlier = None if node.get("regenerate_output") else _reusable(run.owner_id, key)
    now = timezone.now()
    if earlier:
        if _transition(nr, s.PENDING, s.REUSED, cache_key=key, reused_from=earlier, outputs=earlier.outputs,
                       output_ids=earlier.output_ids, queued_at=now, started_at=now, finished_at=now):
            events.record(run.id, executor.Event("node_reused", nr.node_id, {"from_run": earlier.run_id}))
            return True
        return False
    _transition(nr, s.PENDING, s.QUEUED, cache_key=key, queued_at=now, send_due_at=now, send_error="")
    return False


def _transition(nr: NodeRun, old: str, new: str, **fields) -> bool:
    """Move a NodeRun from `old` to `new` only if nobody else moved it first."""
    won = NodeRun.objects.filter(pk=nr.pk, status=old).update(status=new, **fields) == 1
    if won:
        nr.status = new
        for k, v in fields.items():
            setattr(nr, k, v)
    return won


def _reusable(owner_id: int, key: str) -> NodeRun | None:
    candidates = NodeRun.objects.filter(cache_key=key, status=s.COMPLETED, run__owner_id=owner_id).order_by("-id")
    for earlier in candidates[:5]:
        if not paths.is_safe_id(earlier.node_id):
            continue  # a node of an old run named '..' wrote where it should not have: never reused
        if all(Path(p).is_dir() for p in earlier.outputs.values()):
            return earlier
    return None


# ---------------------------------------------------------------- execute


def node_dir(run_id: int, node_id: str) -> Path:
    """The node's folder, checked to be inside its run's folder (paths.OutsideFolder if not)."""
    return paths.node_dir(settings.ARTIFACT_ROOT, run_id, node_id)


def execute_noderun(noderun_id: int) -> list[int]:
    """Run one queued node (in a worker, or inline); return the NodeRun ids that can start next.

    Two commits per node: claiming it, then its outcome, its events and what becomes ready.
    """
    nr = NodeRun.objects.select_related("run").defer("run__snapshot").filter(pk=noderun_id).first()
    if nr is None:
        return []  # its run was deleted while the task waited in the queue
    run = nr.run
    module = get_catalogue().get(nr.kind)
    if module.distributed and nr.status == s.QUEUED and gang.forward_if_unfit(nr, _worker_name()):
        return []  # this worker cannot be its node 0: handed on to one that can
    if not _transition(nr, s.QUEUED, s.RUNNING, started_at=timezone.now(), heartbeat_at=timezone.now(),
                       worker=f"{socket.gethostname()}:{_worker_name()}", send_due_at=None):
        return []  # cancelled or taken meanwhile (a duplicate message of the outbox ends here)
    g = run_graph(run)
    node = g.nodes[nr.node_id]
    upstream = {x.node_id: x for x in NodeRun.objects.filter(run_id=run.id, node_id__in=g.parents[nr.node_id]).order_by()}
    inputs = {}
    for port, (up, out) in g.inputs[nr.node_id].items():
        path = Path(upstream[up].outputs[out])
        meta = executor.read_meta(path)
        inputs[port] = executor.InputArtifact(path, meta.get("type", ""), meta)

    buffer = events.Buffer(run.id)
    launcher = None
    if module.distributed:  # its processes are started across workers by gang.py
        launcher = gang.launcher_for(nr.pk, _worker_name())
    watch = _Heartbeat(nr.pk, run.pk, buffer)
    watch.start()
    try:
        try:
            outputs = executor.execute(module, node, inputs, node_dir(run.id, nr.node_id),
                                       buffer.add, watch.cancel_seen.is_set, launcher)
        finally:
            watch.stop()
    except BaseException as e:
        watch.stop()  # again: a cancel may have landed inside the first stop
        cancelled = isinstance(e, executor.Cancelled) or watch.cancel_seen.is_set()
        text = "Cancelled by the user." if cancelled else executor.error_text(e)
        with transaction.atomic():
            _transition(nr, s.RUNNING, s.CANCELLED if cancelled else s.FAILED, error=text, finished_at=timezone.now())
            buffer.add(executor.Event("node_cancelled" if cancelled else "node_failed", nr.node_id, {"error": text}))
            buffer.flush()
            ready = advance(run.id, [nr.node_id])
        if isinstance(e, (KeyboardInterrupt, SystemExit)) and not cancelled:
            raise
        return ready
    ids = {port: cache.output_identity(nr.cache_key, nr.pk, port) for port in outputs}
    with transaction.atomic():
        if _transition(nr, s.RUNNING, s.COMPLETED, outputs=outputs, output_ids=ids, finished_at=timezone.now()):
            buffer.add(executor.Event("node_finished", nr.node_id, {"duration": nr.duration}))
        buffer.flush()
        return advance(run.id, [nr.node_id])


def _worker_name() -> str:
    try:
        from celery import current_task

        if current_task and current_task.request.hostname:
            return current_task.request.hostname
    except Exception:
        pass
    return "inline"


class _Heartbeat(threading.Thread):
    """While a node runs: prove the worker is alive, and notice a cancel request.

    On cancel, the module's thread gets a `Cancelled` exception at its next Python instruction,
    so that even a module that never calls ctx.check_cancelled() stops.
    """

    def __init__(self, noderun_id: int, run_id: int, buffer: events.Buffer):
        super().__init__(daemon=True, name=f"heartbeat-{noderun_id}")
        self.noderun_id, self.run_id, self.buffer = noderun_id, run_id, buffer
        self.target_thread = threading.get_ident()
        self.stopped = threading.Event()
        self.cancel_seen = threading.Event()
        self.lock = threading.Lock()

    def run(self):
        try:
            while not self.stopped.wait(settings.HEARTBEAT_SECONDS):
                self.buffer.flush()
                NodeRun.objects.filter(pk=self.noderun_id, status=s.RUNNING).update(heartbeat_at=timezone.now())
                if not self.cancel_seen.is_set() and Run.objects.filter(pk=self.run_id, cancel_requested=True).exists():
                    self.cancel_seen.set()
                    with self.lock:
                        if not self.stopped.is_set():
                            ctypes.pythonapi.PyThreadState_SetAsyncExc(
                                ctypes.c_ulong(self.target_thread), ctypes.py_object(executor.Cancelled))
        finally:
            connection.close()

    def stop(self):
        with self.lock:
            self.stopped.set()
            # an exception scheduled but not yet raised must not hit the caller's next line
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self.target_thread), None)
        self.join()


# ---------------------------------------------------------------- cancel, lost workers


def cancel(run: Run) -> None:
    with transaction.atomic():
        Run.objects.filter(pk=run.pk).update(cancel_requested=True)
        now = timezone.now()
        for nr in run.nodes.filter(status__in=[s.PENDING, s.QUEUED]):
            _transition(nr, nr.status, s.CANCELLED, finished_at=now, error="Cancelled by the user before it started.")
    events.record(run.id, executor.Event("run_cancel_requested", "", {}))
    advance(run.id)


def reap_lost_nodes() -> int:
    """Fail running nodes whose worker stopped sending heartbeats (killed, crashed, unplugged)."""
    limit = timezone.now() - timedelta(seconds=settings.LOST_AFTER_SECONDS)
    lost = 0
    for nr in NodeRun.objects.filter(status=s.RUNNING, heartbeat_at__lt=limit):
        text = (f"WorkerLostError: the worker {nr.worker} stopped responding while running this node "
                f"(no heartbeat since {nr.heartbeat_at:%Y-%m-%d %H:%M:%S} UTC): it was killed or lost.")
        text += gang.lost_with_worker(nr)  # a distributed node: the ranks that ran on that worker
        if _transition(nr, s.RUNNING, s.FAILED, error=text, finished_at=timezone.now()):
            events.record(nr.run_id, executor.Event("node_failed", nr.node_id, {"error": text}))
            dispatch(advance(nr.run_id, [nr.node_id]))
            lost += 1
    return lost


def live_workers():
    return Worker.objects.filter(last_seen__gte=timezone.now() - timedelta(seconds=settings.LOST_AFTER_SECONDS))


def waiting_message(run: Run) -> str:
    """Why a queued run is not moving, in words, or ''."""
    if run.finished or run.nodes.filter(status=s.RUNNING).exists():
        return ""
    broker = outbox.waiting_for_broker(run.id)
    if broker:
        return broker
    if run.nodes.filter(status=s.QUEUED).exists() and not live_workers().exists():
        return ("No worker is running: the run is queued and kept, and starts as soon as a worker connects "
                "(`make run` starts one; `make worker` starts one alone).")
    return ""
