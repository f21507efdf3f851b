"""Compute targets headless and through the API: `run_pipeline --compute-target / --node-target`
and a submit's `compute_target` choose the run's targets, checked against those the workers
joined (their rows, as their heartbeats write them); inline, every node runs in this process."""
import json
import re

import pytest
from django.utils import timezone

from designer.pipelines.models import Pipeline, Run, Worker
from tests.pipelines.test_commands import run_command, write
from tests.pipes import chain

pytestmark = pytest.mark.django_db


@pytest.fixture
def cpu_worker():
    return Worker.objects.create(hostname="c1@box", compute_target="cpu", cpus=4, last_seen=timezone.now())


def test_run_pipeline_takes_the_runs_targets_and_names_one_that_does_not_exist(tmp_path, cpu_worker):
    path = write(tmp_path, chain(2))
    code, _, err = run_command("run_pipeline", path, "--compute-target", "gpu")
    assert code == 1 and ("the pipeline's default compute target 'gpu' does not exist: the compute targets are "
                          "cpu (1 live worker)") in err
    code, _, err = run_command("run_pipeline", path, "--node-target", "n1=gpu")
    assert code == 1 and "- Toy add, parameter 'compute_target': Compute target 'gpu' does not exist" in err
    code, _, err = run_command("run_pipeline", path, "--node-target", "n7=gpu")
    assert code == 1 and "--node-target 'n7=gpu': expected NODE=NAME, NODE one of the file's node ids (n0, n1)" in err
    assert not Run.objects.exists()
    # inline, the nodes run here whatever target they name
    code, out, _ = run_command("run_pipeline", path, "--inline", "--compute-target", "gpu", "--node-target", "n1=tpu")
    assert code == 0, out
    snapshot = Run.objects.get().snapshot
    assert snapshot["compute_target"] == "gpu" and snapshot["nodes"][1]["run_settings"] == {"compute_target": "tpu"}


def test_a_submit_through_the_api_may_choose_the_runs_default_target(owner_client, users, cpu_worker):
    p = Pipeline.objects.create(owner=users["owner"], name="p", draft=chain(2))
    r = owner_client.post(f"/api/pipelines/{p.id}/runs", json.dumps({"compute_target": "gpu"}), content_type="application/json")
    assert r.status_code == 400
    assert r.json()["problems"][0]["text"].startswith("the pipeline's default compute target 'gpu' does not exist")
    r = owner_client.post(f"/api/pipelines/{p.id}/runs", json.dumps({"compute_target": 7}), content_type="application/json")
    assert r.status_code == 400 and "`compute_target` is the name of a compute target" in r.json()["error"]
    r = owner_client.post(f"/api/pipelines/{p.id}/runs", json.dumps({"compute_target": "cpu"}), content_type="application/json")
    assert r.status_code == 201, r.content
    assert Run.objects.get(pk=r.json()["id"]).snapshot["compute_target"] == "cpu"
    assert "compute_target" not in Pipeline.objects.get(pk=p.id).draft  # the pipeline keeps its own


def test_a_modules_run_settings_offer_the_targets_and_the_page_has_them_for_the_pipelines_default(owner_client, users, cpu_worker):
    Worker.objects.create(hostname="g1@box", compute_target="gpu", cpus=4, gpus=1, last_seen=timezone.now(), stopped_at=timezone.now())
    p = Pipeline.objects.create(owner=users["owner"], name="p", draft=chain(2))
    pane = owner_client.post(f"/pipelines/{p.id}/pane", {"node": json.dumps(
        {"id": "n1", "kind": "toy_add", "run_settings": {"compute_target": "gpu"}})}).content.decode()
    select = re.search(r'<select id="rs-compute_target" data-run-setting="compute_target" data-type="str".*?</select>', pane, re.S).group(0)
    assert re.findall(r'<option value="([^"]*)" (selected)?>([^<]*)</option>', select) == [
        ("", "", "Use the pipeline's default"), ("cpu", "", "cpu (1 live worker)"), ("gpu", "selected", "gpu (no live workers)")]
    pane = owner_client.post(f"/pipelines/{p.id}/pane", {"node": json.dumps(
        {"id": "n1", "kind": "toy_add", "run_settings": {"compute_target": "old"}})}).content.decode()
    assert '<option value="old" selected>old (not found: no worker joined it)</option>' in pane
    page = owner_client.get(f"/pipelines/{p.id}/").content.decode()
    boot = json.loads(re.search(r'<script id="designer-boot" type="application/json">(.*?)</script>', page, re.S).group(1))
    assert boot["compute_targets"] == [{"name": "cpu", "live": 1}, {"name": "gpu", "live": 0}]
