"""Pre-flight checks against the machines that run modules, not the web machine: each worker's
heartbeat says which pretrained weights files are in its torch hub folder, and a pipeline whose
ResNet is pretrained has no problem when a live worker has the file, even though the web process
has none (production: the web app runs elsewhere). Real Celery workers, each with its own
TORCH_HOME."""
import json
import re
import time

import pytest
from django.urls import reverse

from designer.pipelines.models import Pipeline, Worker
from modules._vision_models import WEIGHTS_FILES
from tests.pipes import node, pipeline

pytestmark = pytest.mark.production  # the web app and the workers apart: production's shape

WEIGHTS = WEIGHTS_FILES["resnet18"]
DOC = pipeline([node("r", "resnet", model_name="resnet18")], [])


def torch_home(root, *files):
    folder = root / "hub" / "checkpoints"
    folder.mkdir(parents=True)
    for f in files:
        (folder / f).write_bytes(b"weights")
    return root


def problems(client):
    r = client.post("/api/validate", json.dumps(DOC), content_type="application/json")
    assert r.status_code == 200, r.content
    return [p["message"] for p in r.json()["problems"]]


def wait_for(condition, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    raise TimeoutError("never happened")


def test_the_workers_weights_count_and_the_web_machines_do_not(owner_client, users, start_worker, tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_HOME", str(torch_home(tmp_path / "web")))  # the web machine has nothing
    # no worker up: this machine's folder is the one checked (the embedded app)
    assert problems(owner_client) == [f"Pretrained: the weights {WEIGHTS} are not on "
                                      f"this machine ({tmp_path / 'web' / 'hub' / 'checkpoints'}): untick Pretrained, or copy the file there"]

    empty = torch_home(tmp_path / "w1")
    w1 = start_worker("w1", concurrency=1, extra_env={"TORCH_HOME": str(empty)})
    (message,) = problems(owner_client)
    assert f"are not on worker {w1.hostname} ({empty / 'hub' / 'checkpoints'})" in message

    w2 = start_worker("w2", concurrency=1, extra_env={"TORCH_HOME": str(torch_home(tmp_path / "w2", WEIGHTS))})
    assert Worker.objects.get(hostname=w2.hostname).weights["files"] == [WEIGHTS]
    # the Compute page says what each has
    page = owner_client.get(reverse("compute")).content.decode()
    row = re.search(rf'<tr data-hostname="{re.escape(w2.hostname)}">(.*?)</tr>', page, re.S).group(1)
    assert re.search(rf'title="[^"]*: {WEIGHTS}">1 file\s+<span class="muted">in {re.escape(str(tmp_path))}/w2/hub/checkpoints</span>', row), row
    assert ">0 files" in re.search(rf'<tr data-hostname="{re.escape(w1.hostname)}">(.*?)</tr>', page, re.S).group(1)
    assert problems(owner_client) == []  # one of the workers has it: a run can find it
    p = Pipeline.objects.create(owner=users["owner"], name="p", draft=DOC)
    assert owner_client.get(f"/api/pipelines/{p.id}").json()["problems"] == []

    # that worker stops: the file is on no live worker any more
    w2.stop()
    wait_for(lambda: problems(owner_client) != [])
    assert f"are not on worker {w1.hostname}" in problems(owner_client)[0]

    # copied onto the remaining worker: its next heartbeat says so
    (empty / "hub" / "checkpoints" / WEIGHTS).write_bytes(b"weights")
    wait_for(lambda: problems(owner_client) == [])


@pytest.mark.django_db
def test_a_submit_is_refused_only_when_no_live_worker_has_the_weights(owner_client, users, tmp_path, monkeypatch):
    """The same check at submit, from the workers' rows (as their heartbeat writes them)."""
    from django.utils import timezone

    monkeypatch.setenv("TORCH_HOME", str(torch_home(tmp_path / "web")))
    p = Pipeline.objects.create(owner=users["owner"], name="p", draft=DOC)
    live = Worker.objects.create(hostname="w1@a", last_seen=timezone.now(), weights={"folder": "/srv/hub", "files": [WEIGHTS]})
    r = owner_client.post(f"/api/pipelines/{p.id}/runs", "{}", content_type="application/json")
    assert r.status_code == 201, r.content
    live.weights = {"folder": "/srv/hub", "files": []}
    live.save()
    r = owner_client.post(f"/api/pipelines/{p.id}/runs", "{}", content_type="application/json")
    assert r.status_code == 400
    assert f"the weights {WEIGHTS} are not on worker w1@a (/srv/hub)" in json.dumps(r.json())
