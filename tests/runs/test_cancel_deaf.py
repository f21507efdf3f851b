"""Cancel that cannot corrupt (issue 11, item 4), for a module that never reaches a safe point:
CANCEL_GRACE_SECONDS after the cancel, its node is recorded as cancelled and its worker's pool
process is ended (nothing is injected into its thread); Celery starts another pool process, and
the worker runs the next node."""
import re
import time
from pathlib import Path

import pytest
from django.conf import settings

from designer.engine import statuses as st
from designer.pipelines.models import Event, Run
from designer.pipelines.runs import service as runs
from tests.conftest import TEST_DATA, wait_for_run
from tests.pipes import link, node, pipeline
from tests.workers import CeleryWorker

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.production]
GRACE = 3


@pytest.fixture
def worker(transactional_db):
    w = CeleryWorker("deaf", concurrency=1, log_dir=TEST_DATA, extra_env={"CANCEL_GRACE_SECONDS": str(GRACE)}).wait_ready()
    yield w
    w.stop()


def gone(pid: int) -> bool:
    try:
        return "(zombie)" in Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True


def deaf(seconds=600.0, value=1):
    return pipeline([node("src", "toy_source", value=value), node("deaf", "toy_deaf", seconds=seconds)],
                    [link("src", "deaf")], name="deaf to a cancel")


def test_a_module_deaf_to_a_cancel_has_its_process_ended_and_the_worker_goes_on(worker, users):
    run = runs.submit(users["owner"], deaf())
    log = Path(settings.ARTIFACT_ROOT) / str(run.id) / "deaf" / "logs" / "70_driver_log.txt"

    def said():  # the module's line in its log: "HH:MM:SS pid N"
        return re.search(r" pid (\d+)\n", log.read_text()) if log.exists() else None

    wait_for_run(run.id, timeout=120, until=lambda r: said())
    pid = int(said().group(1))
    asked = time.monotonic()
    runs.cancel(Run.objects.get(pk=run.id))
    run = wait_for_run(run.id, timeout=60)
    took = time.monotonic() - asked
    nr = run.nodes.get(node_id="deaf")
    assert run.status == st.CANCELLED and nr.status == st.CANCELLED, (run.status, nr.status, nr.error)
    assert f"reached no safe point within {GRACE} s (setting CANCEL_GRACE_SECONDS): its worker process was ended" in nr.error
    assert GRACE <= took < GRACE + 30, took  # (its heartbeat notices the cancel, then waits the grace)
    assert not nr.outputs  # nothing of it is there to be reused
    assert [e.type for e in Event.objects.filter(run=run, node_id="deaf")].count("node_cancelled") == 1
    deadline = time.monotonic() + 30
    while not gone(pid):
        assert time.monotonic() < deadline, f"the pool process {pid} is still there"
        time.sleep(0.1)
    # the worker goes on with a new pool process: the same module, not cancelled, completes
    again = wait_for_run(runs.submit(users["owner"], deaf(seconds=0.1, value=2)).id, timeout=120)
    assert again.status == st.COMPLETED, {x.node_id: x.error for x in again.nodes.all()}
    assert again.nodes.get(node_id="deaf").worker.hostname == worker.hostname
