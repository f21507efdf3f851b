"""No worker, and a worker that dies: runs are kept, and never hang."""
import time

import pytest
from django.conf import settings

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


def test_a_node_whose_worker_is_killed_runs_again_on_another_worker_and_one_without_retries_fails(start_worker, users, owner_client, tmp_path):
    """The worker dies (the OOM killer, an unplugged machine): the maintenance process `make run`
    starts beside it (manage.py maintenance) sends its node back to the queue, and the next worker
    runs it, the node's log and the API saying which attempt was lost where. With Max retries 0 the
    node fails, saying why. The page only reads."""
    maintenance = MaintenanceProcess("beside", TEST_DATA)
    try:
        hold = tmp_path / "hold"
        hold.touch()  # the first attempt waits on it until its worker is killed
        doc = chain(3)
        doc["nodes"][1]["parameters"]["hold_file"] = str(hold)
        worker = start_worker("doomed")
        run = runs.submit(users["owner"], doc)
        wait_for_run(run.id, until=lambda r: r.nodes.filter(node_id="n1", status="running").exists())
        worker.kill()
        killed_at = time.monotonic()
        while (node := owner_client.get(f"/api/runs/{run.id}").json()["nodes"]["n1"])["attempt"] != 2:
            assert node["status"] == "running" and time.monotonic() - killed_at < 30, ("the node was not sent back", node)
            time.sleep(0.5)
        assert node["status"] == "queued"  # no worker is up: it waits, kept
        hold.unlink()
        rescue = start_worker("rescue")
        run = wait_for_run(run.id, timeout=60)
        assert run.status == "completed", {nr.node_id: (nr.status, nr.error) for nr in run.nodes.all()}
        n1 = owner_client.get(f"/api/runs/{run.id}").json()["nodes"]["n1"]
        assert n1["attempt"] == 2 and "rescue" in n1["worker"] and n1["error"] == ""
        [lost] = n1["attempts"]
        assert lost["attempt"] == 1 and worker.hostname in lost["worker"] and lost["reason"].startswith("WorkerLostError:")
        log = owner_client.get(f"/api/runs/{run.id}/nodes/n1/log").json()["text"]
        assert f"attempt 2: attempt 1 ran on {lost['worker']} and was lost" in log, log

        doc["nodes"][1]["run_settings"] = {"max_retries": 0}
        doc["nodes"][1]["parameters"]["amount"] = 2  # (not the completed node again)
        hold.touch()
        run = runs.submit(users["owner"], doc)
        wait_for_run(run.id, until=lambda r: r.nodes.filter(node_id="n1", status="running").exists())
        rescue.kill()
        killed_at = time.monotonic()
        while owner_client.get(f"/api/runs/{run.id}").json()["status"] not in ("failed", "completed"):
            assert time.monotonic() - killed_at < 30, "the run hangs after its worker died"
            time.sleep(0.5)
        run.refresh_from_db()
        lost = run.nodes.get(node_id="n1")
        assert lost.status == "failed" and lost.error.startswith("WorkerLostError:") and lost.attempt == 1
        assert run.nodes.get(node_id="n2").status == "not_run"
    finally:
        maintenance.end()


@pytest.mark.skipif(not settings.DATABASES["default"]["ENGINE"].endswith("postgresql"),
                    reason="the story above, for a component's own checkpoint: make test's production pass")
def test_a_component_whose_worker_is_killed_goes_on_from_its_own_checkpoint(start_worker, users, tmp_path):
    """examples/components/resumable_train: the script saves its checkpoint in
    $DESIGNER_CHECKPOINT_DIR every epoch; its worker killed after epoch 2, the next attempt finds
    that folder as it was, with DESIGNER_ATTEMPT=2, and trains the epochs left, once each."""
    import json

    from designer.pipelines.models import Event
    from tests.pipes import node, out_path, pipeline

    maintenance = MaintenanceProcess("beside", TEST_DATA)
    try:
        doomed = start_worker("doomed")
        doc = pipeline([node("train", "resumable_train", epochs=6, pause=1.0)], [])
        run = runs.submit(users["owner"], doc)
        wait_for_run(run.id, timeout=120, until=lambda r: Event.objects.filter(run=r, type="metric").count() >= 2)
        doomed.kill()
        start_worker("rescue")
        run = wait_for_run(run.id, timeout=120)
        train = run.nodes.get()
        assert run.status == "completed" and train.attempt == 2, (train.status, train.error, train.attempts)
        history = json.loads((out_path(train.outputs["model"]) / "history.json").read_text())
        assert [h["epoch"] for h in history] == [1, 2, 3, 4, 5, 6]  # each once
        first = [h["epoch"] for h in history if h["attempt"] == 1]
        assert len(first) >= 2 and all(h["attempt"] == 2 for h in history[len(first):]), history
        log = (out_path(train.outputs["model"]).parent / "logs" / "70_driver_log.txt").read_text()
        assert "attempt 2: resumed from " in log and f"after epoch {first[-1]}" in log, log[-3000:]
    finally:
        maintenance.end()
