"""A worker that dies during a distributed job: the node fails, naming what was lost, and no
process of the job is left on the machine."""
import time

import pytest

from designer.pipelines import runs
from designer.pipelines.models import NodeLaunch
from tests.conftest import wait_for_run
from tests.pipelines.test_distributed import leftover_processes, no_process_left, toy

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.production]


def _running_on_both(run):
    def ready(r):
        launches = NodeLaunch.objects.filter(noderun__run=r)
        return launches.count() == 2 and all(x.status == "running" for x in launches) and len(leftover_processes(r)) >= 4
    wait_for_run(run.id, timeout=60, until=ready)
    time.sleep(2)  # the ranks are past their rendezvous and all-reducing
    return {x.index: x.worker for x in NodeLaunch.objects.filter(noderun__run=run)}


def test_a_worker_dying_mid_job_fails_the_node_naming_the_lost_rank(start_worker, users):
    workers = {w.hostname: w for w in (start_worker("loss-a"), start_worker("loss-b"))}
    run = runs.submit(users["owner"], toy(2, 1, steps=100000, step_seconds=0.05))
    member = _running_on_both(run)[1]
    workers[member].kill()
    killed = time.monotonic()
    run = wait_for_run(run.id, timeout=60)
    nr = run.nodes.get()
    assert run.status == "failed" and time.monotonic() - killed < 30
    assert "was lost with its worker " + member in nr.error and "Toy distributed: rank " in nr.error, nr.error
    no_process_left(run)


def test_the_node_0_worker_dying_mid_job_stops_the_other_nodes(start_worker, users):
    workers = {w.hostname: w for w in (start_worker("loss-c"), start_worker("loss-d"))}
    run = runs.submit(users["owner"], toy(2, 1, steps=100000, step_seconds=0.05))
    master = _running_on_both(run)[0]
    workers[master].kill()
    killed = time.monotonic()
    run = wait_for_run(run.id, timeout=60)
    nr = run.nodes.get()
    assert run.status == "failed" and time.monotonic() - killed < 30
    assert nr.error.startswith("WorkerLostError:") and master in nr.error
    no_process_left(run)
    assert NodeLaunch.objects.get(noderun=nr, index=1).status == "exited"
