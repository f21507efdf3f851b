"""Why a distributed job could not start or failed, in words: each text names the module, the
worker, the rank and what to change. Node 0 raises them as DistributedLaunchError; the reaper of
lost workers adds lost_with_worker() to a lost node's error."""
from __future__ import annotations

from django.conf import settings
from django.utils import timezone

from designer.engine import statuses as st
from designer.pipelines.models import NodeLaunch, NodeRun, Worker
from designer.pipelines.runs import artifacts
from designer.pipelines.runs.launchers.gang import Gang
from sdk import layout
from supervision import launch

# ---------------------------------------------------------------- before any process starts


def too_many_processes(gang: Gang) -> str:
    me = gang.me
    return (f"{gang.label}: Process count per node is {gang.p}, more than the {me.units} {me.unit_name} of worker "
            f"{me.hostname} (node 0); lower Process count per node to at most {me.units}")


def too_few_workers(gang: Gang, can: int, others: list[Worker], busy: list[Worker], small: list[Worker]) -> str:
    alive = [gang.me.hostname] + [w.hostname for w in others]
    why = f"{len(alive)} worker(s) alive ({', '.join(alive)})"
    if busy:
        why += f"; busy with other nodes: {', '.join(w.hostname for w in busy)}"
    if small:
        why += (f"; fewer units than Process count per node {gang.p}: "
                + ", ".join(f"{w.hostname} ({w.units} {w.unit_name})" for w in small))
    return (f"{gang.label}: Node count is {gang.n}, but only {can} worker(s) can take a node now: {why}. "
            f"One worker is one node: lower Node count to at most {can}, or start more workers")


def ports_in_use(gang: Gang, ports: list[int]) -> str:
    names = f"port {ports[0]} is" if len(ports) == 1 else f"ports {ports[0]}-{ports[-1]} are"
    return (f"{gang.label}: the rendezvous {names} in use on worker {gang.me.hostname} (node 0); free it, or set "
            "DISTRIBUTED_PORTS on the workers to other ports (0: any free port)")


# ---------------------------------------------------------------- once it ran


def lost_members(members: list[NodeLaunch]) -> list[NodeLaunch]:
    """Running nodes whose worker sent no heartbeat for LOST_AFTER_SECONDS."""
    now = timezone.now()
    return [m for m in members if m.status == st.RUNNING and m.heartbeat_at
            and (now - m.heartbeat_at).total_seconds() > settings.LOST_AFTER_SECONDS]


def failure(gang: Gang, late: list[NodeLaunch], local_code: int | None) -> str:
    """Why the job failed, once every node was stopped: a lost worker, a node that never
    started, the first rank that failed, or else a torchrun that exited badly."""
    members = gang.members()
    states = launch.rank_states(gang.state_dir)
    lost = lost_members(members)
    if lost:
        return _lost_member(gang, lost[0], states)
    if late:
        m = late[0]
        return (f"{gang.label}: worker {m.worker_name} did not start node {m.index} within "
                f"{settings.DISTRIBUTED_START_SECONDS:g} s (DISTRIBUTED_START_SECONDS); the other nodes were stopped")
    first = launch.first_failure(gang.state_dir)
    if first:
        rank_state, log = first.state, layout.driver_log(first.rank)
        return (f"{gang.label}: rank {first.rank} (node {rank_state['node_rank']}, local rank {rank_state['local_rank']}, "
                f"worker {rank_state['worker']}) {first.how}; the other ranks were stopped. The last lines of {log}:\n"
                f"{launch.tail(gang.logs / log)}")
    codes = {0: local_code} | {m.index: m.exit_code for m in members}
    index = next((i for i, c in sorted(codes.items()) if c not in (None, 0)), 0)
    return (f"{gang.label}: torchrun on node {index} exited with code {codes[index]} before any process failed; "
            f"the last lines of {layout.MPI_LOG}:\n{launch.tail(gang.mpi_log)}")


def _lost_member(gang: Gang, m: NodeLaunch, states: dict[int, dict]) -> str:
    ranks = sorted(r for r, state in states.items() if state["node_index"] == m.index)
    seconds = (timezone.now() - m.heartbeat_at).total_seconds()
    if not ranks:
        return (f"{gang.label}: node {m.index} (worker {m.worker_name}) was lost before its processes started: "
                f"no word from it for {seconds:.0f} s; the other nodes were stopped")
    return (f"{gang.label}: {_rank_names(ranks)} was lost with its worker {m.worker_name} "
            f"(node {states[ranks[0]]['node_rank']}): no heartbeat for {seconds:.0f} s, the worker was killed or cut off; "
            "the other ranks were stopped")


def _rank_names(ranks: list[int], capital: bool = False) -> str:
    word = "Rank" if capital else "rank"
    return f"{word} {ranks[0]}" if len(ranks) == 1 else f"{word}s {', '.join(map(str, ranks))}"


def lost_with_worker(nr: NodeRun) -> str:
    """For a distributed node whose own worker (node 0's) was lost: which ranks ran there, from
    the NodeLaunch rows (which node that worker ran) and the ranks' state files (which ranks that
    node ran), as a sentence for the node's error; '' for any other node."""
    if nr.worker_id is None:
        return ""
    indexes = set(NodeLaunch.objects.filter(noderun=nr, worker_id=nr.worker_id).values_list("index", flat=True))
    if not indexes:
        return ""
    states = launch.rank_states(artifacts.ranks_dir(artifacts.node_dir(nr.run_id, nr.node_id)))
    ranks = sorted(r for r, state in states.items() if state.get("node_index") in indexes)
    nodes = ", ".join(str(i) for i in sorted(indexes))
    if not ranks:
        return f" It ran node {nodes} of the distributed job, before its processes started; the other nodes stop on their own."
    names = _rank_names(ranks, capital=True) + (" was" if len(ranks) == 1 else " were")
    node_ranks = ", ".join(str(n) for n in sorted({states[r]["node_rank"] for r in ranks}))
    return f" {names} lost with it (node {node_ranks}); the other ranks of the distributed job stop on their own."
