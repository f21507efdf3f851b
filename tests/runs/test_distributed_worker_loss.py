"""A worker that dies during a distributed job: the node fails, naming the rank and the worker
lost, the logs of the lost rank stay readable, and no process of the job is left on the machine."""
import socket
import time

import pytest

from designer.pipelines.models import NodeLaunch
from designer.pipelines.runs import service as runs
from supervision import launch
from tests.conftest import wait_for_run
from tests.runs.test_distributed import leftover_processes, logs_of, no_process_left, toy

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.production]


def _running_on_both(run):
    def ready(r):
        launches = NodeLaunch.objects.filter(noderun__run=r)
        return launches.count() == 2 and all(x.status == "running" for x in launches) and len(leftover_processes(r)) >= 4
    wait_for_run(run.id, timeout=60, until=ready)
    deadline = time.monotonic() + 120  # the ranks past their rendezvous and all-reducing (a busy machine is slow)
    while not (len(launch.rank_states(logs_of(run).parent / "work" / "ranks")) == 2
               and all("step 3: sum 2" in _text(logs_of(run) / f"70_driver_log_{rank}.txt") for rank in (0, 1))):
        assert time.monotonic() < deadline, "the two ranks did not start all-reducing"
        time.sleep(0.2)
    return {x.index: x.worker.hostname for x in NodeLaunch.objects.filter(noderun__run=run).select_related("worker")}


def _text(path) -> str:
    try:
        return path.read_text()
    except OSError:  # not written yet
        return ""


def _rank_on(run, worker) -> tuple[int, int]:
    """(rank, node rank) of the one process that ran on `worker` (2 x 1), from the ranks' state files."""
    states = launch.rank_states(logs_of(run).parent / "work" / "ranks")
    [(rank, node_rank)] = [(r, st["node_rank"]) for r, st in states.items() if st["worker"] == worker]
    return rank, node_rank


def test_a_worker_dying_mid_job_fails_the_node_naming_the_lost_rank_and_its_log_survives(start_worker, users, owner_client):
    workers = {w.hostname: w for w in (start_worker("loss-a"), start_worker("loss-b"))}
    run = runs.submit(users["owner"], toy(2, 1, steps=100000, step_seconds=0.05))
    member = _running_on_both(run)[1]
    rank, node_rank = _rank_on(run, member)
    log = f"70_driver_log_{rank}.txt"
    deadline = time.monotonic() + 60
    while "step 3: sum 2" not in (before := (logs_of(run) / log).read_text()):  # all-reducing (a busy machine is slow)
        assert time.monotonic() < deadline, before
        time.sleep(0.2)
    workers[member].kill()
    killed = time.monotonic()
    run = wait_for_run(run.id, timeout=60)
    nr = run.nodes.get()
    assert run.status == "failed" and time.monotonic() - killed < 50  # detection alone waits LOST_AFTER
    assert nr.error.startswith(f"DistributedLaunchError: Toy distributed: rank {rank} was lost with its worker {member} "
                               f"(node {node_rank}): no heartbeat for "), nr.error
    no_process_left(run)
    # its log outlives it: the API still lists it and reads it from the start
    got = owner_client.get(f"/api/runs/{run.id}/nodes/toy/log?file={log}&offset=0").json()
    assert log in got["files"] and got["offset"] == 0 and got["text"].startswith(before)
    assert got["text"].startswith(f"rank {rank} of 2 ") and "step 3: sum 2" in got["text"]


def test_the_node_0_worker_dying_mid_job_stops_the_other_nodes(start_worker, users):
    workers = {w.hostname: w for w in (start_worker("loss-c"), start_worker("loss-d"))}
    run = runs.submit(users["owner"], toy(2, 1, steps=100000, step_seconds=0.05))
    master = _running_on_both(run)[0]
    rank, node_rank = _rank_on(run, master)
    workers[master].kill()
    killed = time.monotonic()
    run = wait_for_run(run.id, timeout=60)
    nr = run.nodes.get()
    assert run.status == "failed" and time.monotonic() - killed < 50  # detection alone waits LOST_AFTER
    assert nr.error.startswith(f"WorkerLostError: the worker {socket.gethostname()}:{master} stopped responding"), nr.error
    assert f"Rank {rank} was lost with it (node {node_rank})" in nr.error, nr.error
    no_process_left(run)
    assert NodeLaunch.objects.get(noderun=nr, index=1).status == "exited"
