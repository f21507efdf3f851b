"""The maintenance loop, the periodic work of the whole installation (designer/pipelines/maintenance.py): one process at a time holds
it, another takes over when its holder stops renewing, and a page's GET never does its work.

tests/runs/test_broker_outage.py runs `manage.py maintenance` as a process alone (killed, then
taken over); the lost-worker tests (test_worker_loss.py, test_distributed_worker_loss.py) have the
workers' own maintenance thread fail the nodes of a killed worker."""
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from designer.engine import statuses as st
from designer.pipelines import maintenance
from designer.pipelines.models import Lease, NodeRun, Sweep
from designer.pipelines.runs import service as runs
from designer.pipelines.sweeps import service as sweeps
from tests.pipes import chain
from tests.sweeps.test_sweeps import config, tuning_pipeline

pytestmark = pytest.mark.django_db(transaction=True)


def test_one_process_holds_the_maintenance_loop_at_a_time_and_another_takes_over_when_it_lapses():
    assert maintenance.hold("worker-a", seconds=60)
    assert not maintenance.hold("worker-b", seconds=60), "two processes ran the periodic work at once"
    assert maintenance.hold("worker-a", seconds=60)  # renewing
    assert maintenance.holder_now() == "worker-a"
    Lease.objects.update(expires_at=timezone.now() - timedelta(seconds=1))  # worker-a was killed: it renews no more
    assert maintenance.holder_now() is None
    assert maintenance.hold("worker-b", seconds=60)
    assert not maintenance.hold("worker-a", seconds=60)  # back from a long pause: it waits its turn
    maintenance.release("worker-b")  # a worker shutting down gives it up: the next one takes it at once
    assert maintenance.hold("worker-a", seconds=60)


def test_a_failing_job_does_not_keep_the_others_from_running_and_each_keeps_its_own_cadence(capsys):
    done = []

    def broken():
        raise ConnectionError("the broker is away")

    todo = [maintenance.Job("send", broken, 1.0), maintenance.Job("reap", lambda: done.append("reap"), 1.0),
            maintenance.Job("collect", lambda: done.append("collect"), 30.0)]
    maintenance.run_due(todo, now=100.0)
    maintenance.run_due(todo, now=100.5)  # nothing is due yet
    maintenance.run_due(todo, now=101.0)
    assert done == ["reap", "collect", "reap"]
    assert "maintenance: send failed: the broker is away" in capsys.readouterr().out


def _writes(queries) -> list[str]:
    return [q["sql"] for q in queries if q["sql"].lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE"))
            or "FOR UPDATE" in q["sql"].upper()]


def test_reading_a_run_or_a_sweep_writes_nothing_and_the_maintenance_loop_does_that_work(users, owner_client):
    """A node whose worker went silent and a sweep past its deadline (no worker is up): the pages
    and the API only read them; the maintenance loop's next tick fails the node and ends the sweep."""
    run = runs.submit(users["owner"], chain(2))
    NodeRun.objects.filter(run=run, node_id="n0").update(status=st.RUNNING, heartbeat_at=timezone.now() - timedelta(hours=1))
    sweep = sweeps.start(users["owner"], tuning_pipeline(), config([{"name": "lr", "expression": "choice", "values": [0.001]}],
                                                                   total=1, concurrent=1, max_duration_minutes=60))
    Sweep.objects.filter(pk=sweep.pk).update(deadline=timezone.now())
    with CaptureQueriesContext(connection) as queries:
        for url in (f"/api/runs/{run.id}", "/api/runs", f"/api/runs/{run.id}/events", f"/api/sweeps/{sweep.pk}", "/api/sweeps",
                    f"/sweeps/{sweep.pk}/", "/sweeps/", "/", "/compute"):
            assert owner_client.get(url).status_code == 200, url
    assert _writes(queries.captured_queries) == []
    assert NodeRun.objects.get(run=run, node_id="n0").status == st.RUNNING
    assert Sweep.objects.get(pk=sweep.pk).status not in st.SWEEP_FINISHED

    maintenance.run_due(maintenance.jobs())
    lost = NodeRun.objects.get(run=run, node_id="n0")
    assert lost.status == st.FAILED and lost.error.startswith("WorkerLostError:")
    sweep.refresh_from_db()
    assert sweep.status in st.SWEEP_FINISHED and "its time ran out (max_duration_minutes: 60)" in sweep.message
