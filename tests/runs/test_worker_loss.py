"""No worker, and a worker that dies: runs are kept, and never hang."""
import time

import pytest

from designer.pipelines.runs import service as runs
from tests.conftest import TEST_DATA, wait_for_run
from tests.pipes import chain
from tests.workers import MaintenanceProcess

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.production]


def test_a_run_submitted_while_no_worker_is_up_waits_then_runs(start_worker, users, owner_client):
    run = runs.submit(users["owner"], chain(2))
    # at once, no sleep: no worker is up to take it, and the message is read from the workers' rows
    status = owner_client.get(f"/api/runs/{run.id}").json()
    assert status["nodes"]["n0"]["status"] == "queued" and "No worker is running" in status["message"]
    start_worker("late")
    assert wait_for_run(run.id, timeout=60).status == "completed"
    assert owner_client.get(f"/api/runs/{run.id}").json()["message"] == ""


def test_a_worker_killed_in_the_middle_of_a_node_fails_the_node_with_that_reason(start_worker, users, owner_client):
    """The only worker dies (the OOM killer, an unplugged machine): the maintenance process `make run`
    starts beside it (manage.py maintenance) fails its node; the page only reads."""
    maintenance = MaintenanceProcess("beside", TEST_DATA)
    try:
        worker = start_worker("doomed")
        run = runs.submit(users["owner"], chain(3, sleep=60))
        wait_for_run(run.id, until=lambda r: r.nodes.filter(node_id="n1", status="running").exists())
        worker.kill()
        killed_at = time.monotonic()
        while owner_client.get(f"/api/runs/{run.id}").json()["status"] not in ("failed", "completed"):
            assert time.monotonic() - killed_at < 30, "the run hangs after its worker died"
            time.sleep(0.5)
        run.refresh_from_db()
        lost = run.nodes.get(node_id="n1")
        assert lost.status == "failed" and lost.error.startswith("WorkerLostError:") and worker.hostname in lost.error
        assert run.nodes.get(node_id="n2").status == "not_run"
    finally:
        maintenance.end()
