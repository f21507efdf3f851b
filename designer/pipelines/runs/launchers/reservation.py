"""Node 0 reserves the other nodes of its job: Node count - 1 other live, idle workers of its
compute target, each with at least Process count per node units (workers.reserve: a conditional
UPDATE, so two jobs never share one)."""
from __future__ import annotations

from designer.engine import statuses as st
from designer.engine.executor import DistributedLaunchError
from designer.pipelines.compute import workers
from designer.pipelines.models import NodeRun, Worker
from designer.pipelines.runs.launchers import explain
from designer.pipelines.runs.launchers.gang import Gang


def reserve_nodes(gang: Gang) -> list[Worker]:
    """[node 0, node 1, ...]: this worker, then the others reserved for the job; raises
    DistributedLaunchError saying why when too few can take a node now."""
    me = gang.me
    if gang.p > me.units:
        raise DistributedLaunchError(explain.too_many_processes(gang))
    workers.void_stale_reservations()
    workers.reserve(me, gang.nr)
    nodes = [me]
    if gang.n == 1:
        return nodes
    # the other nodes come from node 0's compute target: the one the node was routed to
    others = list(workers.live_workers(me.compute_target or None).exclude(hostname=me.hostname).order_by("hostname"))
    running = set(NodeRun.objects.filter(status=st.RUNNING, worker__isnull=False).exclude(pk=gang.nr.pk)
                  .values_list("worker_id", flat=True))
    busy, small = [], []
    for w in others:
        if len(nodes) == gang.n:
            break
        if gang.p > w.units:
            small.append(w)
        elif w.pk in running or not workers.reserve(w, gang.nr):
            busy.append(w)
        else:
            nodes.append(w)
    if len(nodes) < gang.n:
        raise DistributedLaunchError(explain.too_few_workers(gang, len(nodes), others, busy, small))
    gang.say("nodes: " + ", ".join(f"{i}: {w.hostname} ({w.address or w.hostname})" for i, w in enumerate(nodes)))
    return nodes
