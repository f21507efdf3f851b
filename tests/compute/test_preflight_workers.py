"""Pre-flight checks against the machines that run modules, not the web machine: each worker's
heartbeat says which pretrained weights files are in its torch hub folder, and a pipeline whose
ResNet is pretrained has no problem when a live worker has the file, even though the web process
has none (production: the web app runs elsewhere). Real Celery workers, each with its own
TORCH_HOME."""
import json
import re
import time
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from designer.celery import RUN_NODE, app, host_queue
from designer.pipelines.models import NodeRun, Pipeline, Run, Worker
from designer.pipelines.runs import routing
from designer.pipelines.runs import service as runs
from modules._vision_models import WEIGHTS_FILES
from tests.conftest import wait_for_run
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


# ---------------------------------------------------------------- routing: the node goes where the weights are


def real_weights(root):
    """A torch hub folder with a resnet18 weights file that torchvision loads (random weights
    under the DEFAULT weights' file name: none can be downloaded here)."""
    import torch
    import torchvision

    folder = torch_home(root) / "hub" / "checkpoints"
    torch.save(torchvision.models.resnet18().state_dict(), folder / WEIGHTS)
    return root


def queued_resnet(users) -> NodeRun:
    run = Run.objects.create(owner=users["owner"], name="weights", snapshot=DOC)
    return NodeRun.objects.select_related("run").get(pk=NodeRun.objects.create(run=run, node_id="r", kind="resnet",
                                                                             status="queued").pk)


@pytest.mark.django_db
def test_a_pretrained_resnet_is_routed_to_a_live_worker_that_has_the_weights(users, owner_client, django_assert_max_num_queries):
    def worker(name, files):
        return Worker.objects.create(hostname=f"{name}@a", last_seen=timezone.now(),
                                     weights={"folder": f"/srv/{name}", "files": files})

    worker("empty", [])
    worker("full", [WEIGHTS])
    nr = queued_resnet(users)
    assert routing.route_for(nr) == {"queue": host_queue("full@a")}
    assert routing.forward_if_unfit(nr, "full@a") is False  # it has them: it runs it
    # while it waits there (that worker busy, say), the run's status says why the idle one does not take it
    assert owner_client.get(f"/api/runs/{nr.run_id}").json()["message"] == (
        f"ResNet runs only on worker full@a, and starts when it has a free slot; not elsewhere: the weights "
        f"{WEIGHTS} are not on worker empty@a (/srv/empty): untick Pretrained, or copy the file there")
    # an untrained ResNet, and any other module, fits every worker: any of them, and no query
    untrained = queued_resnet(users)
    Run.objects.filter(pk=untrained.run_id).update(snapshot=pipeline([node("r", "resnet", pretrained=False)], []))
    untrained = NodeRun.objects.select_related("run").get(pk=untrained.pk)
    assert routing.route_for(untrained) == {}
    source = Run.objects.create(owner=users["owner"], name="x", snapshot=pipeline([node("s", "toy_source", value=1)], []))
    bare = NodeRun.objects.create(run=source, node_id="s", kind="toy_source", status="queued")
    with django_assert_max_num_queries(0):
        assert routing.route_for(bare) == {}
    # both have them, or neither: any worker (neither: the one that takes it says what is missing)
    worker("also", [WEIGHTS])
    Worker.objects.filter(hostname="empty@a").update(weights={"folder": "/srv/empty", "files": [WEIGHTS]})
    assert routing.route_for(nr) == {}
    assert owner_client.get(f"/api/runs/{nr.run_id}").json()["message"] == ""  # any worker takes it
    Worker.objects.update(weights={"folder": "/srv", "files": []})
    assert routing.route_for(nr) == {} and routing.forward_if_unfit(nr, "empty@a") is False


@pytest.mark.django_db(transaction=True)
def test_every_pretrained_resnet_runs_on_the_worker_with_the_weights_never_on_the_one_without(
        users, start_worker, tmp_path, monkeypatch):
    """Validation passes when one live worker has the weights; each run then finds them: on two
    idle workers (one without), the task goes to the one with them, and a task that the one
    without picked up anyway is handed on."""
    monkeypatch.setenv("TORCH_HOME", str(torch_home(tmp_path / "web")))  # the web machine has nothing
    empty = start_worker("noweights", concurrency=1, extra_env={"TORCH_HOME": str(torch_home(tmp_path / "w1"))})
    full = start_worker("weights", concurrency=1, extra_env={"TORCH_HOME": str(real_weights(tmp_path / "w2"))})
    for attempt in range(4):
        run = wait_for_run(runs.submit(users["owner"], DOC, regenerate=True).id, timeout=90)
        nr = run.nodes.get()
        assert run.status == "completed", f"attempt {attempt + 1}: {nr.error}"
        assert nr.worker.hostname == full.hostname, attempt
    # a message that reached the worker without the weights (sent to its own queue)
    fresh = pipeline([dict(node("r", "resnet", model_name="resnet18"), regenerate_output=True)], [])  # not reused
    run = Run.objects.create(owner=users["owner"], name="hand on", snapshot=fresh)
    NodeRun.objects.create(run=run, node_id="r", kind="resnet")
    [nid] = runs.advance(run.id)
    NodeRun.objects.filter(pk=nid).update(send_due_at=timezone.now() + timedelta(hours=1))  # not by the outbox
    app.send_task(RUN_NODE, args=[nid], queue=host_queue(empty.hostname))
    run = wait_for_run(run.id, timeout=90)
    nr = run.nodes.get()
    assert run.status == "completed", nr.error
    assert nr.worker.hostname == full.hostname
