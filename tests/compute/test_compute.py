"""The Compute page and GET /api/compute: the workers, their units, busy or idle."""
import os
import shutil
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.utils import timezone

from designer.celery import host_queue
from designer.pipelines.models import NodeLaunch, Worker
from designer.pipelines.runs import service as runs
from designer.pipelines.tasks import run_node
from tests.conftest import wait_for_run
from tests.pipes import chain
from tests.runs.test_distributed import logs_of, toy

pytestmark = pytest.mark.django_db


def test_the_compute_page_lists_the_workers_and_is_linked_from_the_top_bar(owner_client):
    Worker.objects.create(hostname="w1@box", cpus=8, gpus=2, concurrency=2, address="box.lan", last_seen=timezone.now())
    Worker.objects.create(hostname="w2@old", cpus=4, last_seen=timezone.now() - timedelta(hours=1))
    page = owner_client.get("/compute").content.decode()
    assert 'href="/compute"' in page
    assert "w1@box" in page and "box.lan" in page and "<td>8</td><td>2</td>" in page
    assert '<td class="state">idle</td>' in page and '<td class="state">lost</td>' in page


def test_the_compute_page_needs_a_sign_in(client):
    assert client.get("/compute").status_code == 302


def test_a_worker_reserved_by_a_running_distributed_node_is_busy(owner_client, users):
    w = Worker.objects.create(hostname="w1@box", cpus=8, last_seen=timezone.now())
    nr = runs.submit(users["owner"], chain(1)).nodes.get()
    nr.status = "running"
    nr.save()
    Worker.objects.filter(pk=w.pk).update(reserved_by=nr)
    [row] = owner_client.get("/api/compute").json()["workers"]
    assert row["busy"] and row["alive"] and row["units"] == 8
    nr.status = "completed"
    nr.save()
    assert not owner_client.get("/api/compute").json()["workers"][0]["busy"]


# ---------------------------------------------------------------- real workers


def _rows(client, workers) -> dict[str, dict]:
    names = {w.hostname for w in workers}
    return {r["hostname"]: r for r in client.get("/api/compute").json()["workers"] if r["hostname"] in names}


def _busy(client, workers) -> dict[str, bool]:
    return {h: r["busy"] for h, r in _rows(client, workers).items()}


@pytest.mark.django_db(transaction=True)
@pytest.mark.production
def test_two_real_workers_show_their_units_their_heartbeat_and_when_they_are_busy(start_worker, users, owner_client):
    workers = [start_worker("cmp-a"), start_worker("cmp-b")]
    first = _rows(owner_client, workers)
    assert set(first) == {w.hostname for w in workers}
    for row in first.values():
        assert row["cpus"] == row["units"] == os.cpu_count() and row["alive"] and not row["busy"], row
        if not shutil.which("nvidia-smi"):
            assert row["gpus"] == 0
    deadline = time.monotonic() + 30  # the heartbeat goes on (a beat every HEARTBEAT_SECONDS; a busy machine delays some)
    def beaten(rows):
        return all(datetime.fromisoformat(row["last_seen"]) > datetime.fromisoformat(first[h]["last_seen"]) for h, row in rows.items())

    while not beaten(second := _rows(owner_client, workers)):
        assert time.monotonic() < deadline, (first, second)
        time.sleep(settings.HEARTBEAT_SECONDS / 2)
    assert all(row["alive"] for row in second.values()), second

    # an ordinary node makes the worker that runs it busy, and only that one
    run = runs.submit(users["owner"], chain(2, sleep=60))
    wait_for_run(run.id, until=lambda r: r.nodes.filter(node_id="n1", status="running").exists())
    running = run.nodes.get(node_id="n1").worker.hostname
    assert _busy(owner_client, workers) == {w.hostname: w.hostname == running for w in workers}
    runs.cancel(run)
    wait_for_run(run.id, timeout=30)
    assert _busy(owner_client, workers) == {w.hostname: False for w in workers}

    # 2 x 1: node 0's worker runs the node, the other one is reserved by it: both busy
    run = runs.submit(users["owner"], toy(2, 1, steps=100000, step_seconds=0.05))
    wait_for_run(run.id, timeout=60, until=lambda r: NodeLaunch.objects.filter(noderun__run=r, status="running").count() == 2)
    assert _busy(owner_client, workers) == {w.hostname: True for w in workers}
    runs.cancel(run)
    assert wait_for_run(run.id, timeout=30).status == "cancelled"
    assert _busy(owner_client, workers) == {w.hostname: False for w in workers}


@pytest.mark.django_db(transaction=True)
@pytest.mark.production
def test_a_worker_offering_fewer_cores_than_process_count_per_node_is_named_when_a_job_needs_it(
        start_worker, users, owner_client, monkeypatch):
    big = start_worker("units-big", extra_env={"WORKER_CPUS": "2"})
    small = start_worker("units-small", extra_env={"WORKER_CPUS": "1"})
    rows = _rows(owner_client, [big, small])
    assert (rows[big.hostname]["units"], rows[small.hostname]["units"]) == (2, 1)  # WORKER_CPUS, not the machine's
    # node 0 is the worker with enough cores: the node's task goes to it alone
    monkeypatch.setattr(runs, "dispatch", lambda ids: [run_node.apply_async(args=[i], queue=host_queue(big.hostname))
                                                       for i in ids])
    started = time.monotonic()
    run = wait_for_run(runs.submit(users["owner"], toy(2, 2, steps=2)).id, timeout=60)
    nr = run.nodes.get()
    assert run.status == "failed" and time.monotonic() - started < 45  # (its message says it was refused before any process started)
    assert nr.worker.hostname == big.hostname
    why = f"fewer units than Process count per node 2: {small.hostname} (1 CPU core(s))"
    assert nr.error.startswith("DistributedLaunchError: Toy distributed: Node count is 2, but only 1 worker(s) can take "
                               "a node now") and why in nr.error, nr.error
    assert why in (logs_of(run) / "70_mpi_log.txt").read_text()
    assert not list(Path(logs_of(run)).glob("70_driver_log_*"))  # no process started
    assert not Worker.objects.filter(reserved_by__isnull=False).exists()
