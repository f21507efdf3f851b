"""The Compute page and GET /api/compute: the workers, their units, busy or idle."""
from datetime import timedelta

import pytest
from django.utils import timezone

from designer.pipelines import runs
from designer.pipelines.models import Worker
from tests.pipes import chain

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
