"""Moving a run forward: after every change, apply the scheduler's decisions (queue, reuse, not
run) and finish the run when nothing is left.

The decisions come from the plain-Python engine (scheduler, cache); this file stores them. It is
safe to call from several workers at once: each transition is a conditional UPDATE that only one
caller can win.
"""
from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from designer.engine import cache, paths
from designer.engine import scheduler as s
from designer.engine import statuses as st
from designer.engine.executor import Event
from designer.pipelines.catalogue.service import get_catalogue
from designer.pipelines.models import NodeRun, Run
from designer.pipelines.runs import artifacts, events, final_metrics, signals
from designer.pipelines.runs.rungraph import run_graph

REUSE_CANDIDATES = 5  # earlier completed nodes of the same key looked at (the newest first)


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
        changed = None if changed is None else list(changed)
        while changed is None or changed:
            nodes, frontier = _around(run_id, g, changed)
            changed = _apply(run, g, nodes, s.next_steps(g, {k: nr.status for k, nr in nodes.items()}, frontier), queued)
        _update_run(run)
    return queued


def _around(run_id: int, g: s.RunGraph, changed: list[str] | None) -> tuple[dict[str, NodeRun], list[str]]:
    """The node runs the scheduler needs to look at after `changed` changed, and where to look."""
    if changed is None:
        return {nr.node_id: nr for nr in NodeRun.objects.filter(run_id=run_id).order_by()}, list(g.nodes)
    status = dict(NodeRun.objects.filter(run_id=run_id, node_id__in=changed).order_by().values_list("node_id", "status"))
    nodes = {nr.node_id: nr for nr in NodeRun.objects.filter(run_id=run_id, node_id__in=g.affected_by(changed, status)).order_by()}
    return nodes, [c for node in changed for c in g.children[node]]


def _apply(run: Run, g: s.RunGraph, nodes: dict[str, NodeRun], decision, queued: list[int]) -> list[str]:
    """Store one decision; return the nodes that changed again (reused: done at once)."""
    changed = []
    now = timezone.now()
    catalogue = get_catalogue(run.owner_id)
    for node_id in decision.not_run:
        transition(nodes[node_id], st.PENDING, st.NOT_RUN, finished_at=now)
    for node_id in decision.ready:
        nr = nodes[node_id]
        if _queue_or_reuse(run, g, catalogue, nr, nodes):
            changed.append(node_id)
        elif nr.status == st.QUEUED:
            queued.append(nr.id)
    return changed


def _update_run(run: Run) -> None:
    """The run started once a node left pending; it is over once no node is left to finish."""
    of_run = NodeRun.objects.filter(run_id=run.pk).order_by()  # no ordering: no join with Run
    if run.status == st.QUEUED and of_run.exclude(status=st.PENDING).exists():
        run.status, run.started_at = st.RUNNING, timezone.now()
        run.save(update_fields=["status", "started_at"])
    if not of_run.filter(status__in=st.ACTIVE).exists():
        statuses = of_run.exclude(status__in=st.SUCCEEDED).values_list("status", flat=True).distinct()
        run.status, run.finished_at = s.outcome(statuses), timezone.now()
        run.metrics = final_metrics.of_run(run.pk)  # what the Jobs page and the API show of it from now on
        run.save(update_fields=["status", "finished_at", "metrics"])
        events.record(run.pk, Event("run_finished", "", {"status": run.status}))
        run_id = run.pk
        transaction.on_commit(lambda: signals.run_finished.send(sender=Run, run_id=run_id))


def _queue_or_reuse(run: Run, g: s.RunGraph, catalogue, nr: NodeRun, nodes: dict[str, NodeRun]) -> bool:
    """Reuse an earlier identical output (True), or queue the node with its message owed."""
    node = g.nodes[nr.node_id]
    module = catalogue.for_node(node)
    inputs = {port: nodes[up].output_ids[out] for port, (up, out) in g.inputs[nr.node_id].items()}
    key = cache.cache_key(module.kind, module.version, module.resolved_params(node.get("parameters", {})), inputs,
                          _processes(module, node), module.code_digest())
    earlier = None if node.get("regenerate_output") else _reusable(run.owner_id, key)
    twin = None if earlier or node.get("regenerate_output") else _in_flight(run, key)
    if twin is not None:
        # the same node is being computed in another run (a sweep's trials share everything that
        # does not depend on a swept parameter): wait for it, then reuse its output (wake_waiters)
        NodeRun.objects.filter(pk=nr.pk, status=st.PENDING).update(waits_for=twin, cache_key=key)
        nr.waits_for_id, nr.cache_key = twin.pk, key
        return False
    now = timezone.now()
    if earlier:
        if transition(nr, st.PENDING, st.REUSED, cache_key=key, reused_from=earlier, outputs=earlier.outputs, waits_for=None,
                      output_ids=earlier.output_ids, queued_at=now, started_at=now, finished_at=now):
            events.record(run.id, Event("node_reused", nr.node_id, {"from_run": earlier.run_id}))
            return True
        return False
    if transition(nr, st.PENDING, st.QUEUED, cache_key=key, queued_at=now, send_due_at=now, send_error="", waits_for=None):
        events.record(run.id, Event("node_queued", nr.node_id, {}))  # the page paints it without asking for the whole run
    return False


def _processes(module, node: dict) -> dict | None:
    """Node count and Process count per node of a distributed module (4 processes do not train
    what 1 trains); its Timeout changes nothing it computes."""
    if not module.distributed:
        return None
    given = node.get("run_settings", {})
    return {name: given.get(name, 1) for name in ("node_count", "process_count_per_node")}


def transition(nr: NodeRun, old: str, new: str, of_attempt: int | None = None, **fields) -> bool:
    """Move a NodeRun from `old` to `new` only if nobody else moved it first (and, given
    `of_attempt`, only while it is at that attempt: a lost worker that comes back changes nothing)."""
    where = {} if of_attempt is None else {"attempt": of_attempt}
    won = NodeRun.objects.filter(pk=nr.pk, status=old, **where).update(status=new, **fields) == 1
    if won:
        nr.status = new
        for k, v in fields.items():
            setattr(nr, k, v)
    return won


def _reusable(owner_id: int, key: str) -> NodeRun | None:
    """An earlier completed node of this owner with this key, of a run not deleted, whose outputs
    are all still there. Only a completed node is reused: a cancelled or failed one never (its
    output may be partial)."""
    candidates = NodeRun.objects.filter(cache_key=key, status=st.COMPLETED, run__owner_id=owner_id,
                                       run__deleted_at__isnull=True).order_by("-id")
    for earlier in candidates[:REUSE_CANDIDATES]:
        if not paths.is_safe_id(earlier.node_id):
            continue  # a node of an old run named '..' wrote where it should not have: never reused
        if all(artifacts.exists(p) for p in earlier.outputs.values()):
            return earlier
    return None


def _in_flight(run: Run, key: str) -> NodeRun | None:
    """The same node (same cache key, same owner) queued or running in another run, or None."""
    return (NodeRun.objects.filter(cache_key=key, status__in=(st.QUEUED, st.RUNNING), run__owner_id=run.owner_id)
            .exclude(run_id=run.pk).order_by("id").first())


def wake_waiters(nr: NodeRun) -> list[int]:
    """`nr` finished: the nodes of other runs that waited for it look again (they reuse its output,
    or, if it failed or was cancelled, run themselves). Returns the NodeRun ids newly queued."""
    queued: list[int] = []
    for waiter in NodeRun.objects.filter(waits_for=nr, status=st.PENDING).select_related("run").defer("run__snapshot"):
        NodeRun.objects.filter(pk=waiter.pk).update(waits_for=None)
        parents = list(run_graph(waiter.run).parents[waiter.node_id])
        queued += advance(waiter.run_id, parents or None)
    return queued


def wake_stranded() -> list[int]:
    """Waiters whose twin finished without waking them (its process died in between)."""
    queued: list[int] = []
    for twin in NodeRun.objects.filter(waiters__status=st.PENDING, status__in=st.TERMINAL).distinct():
        queued += wake_waiters(twin)
    return queued
