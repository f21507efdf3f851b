"""While a sweep runs, its best trial so far is marked and its values can be applied."""
import pytest

from designer.pipelines.models import Pipeline, Sweep, Trial
from tests.pipes import node, pipeline

pytestmark = pytest.mark.django_db

# every trial it may run is there and one still runs: reading it starts nothing
CONFIG = {"sampling": "random", "primary_metric_name": "accuracy", "primary_metric_goal": "maximize",
          "parameter_space": [{"name": "lr", "expression": "choice", "values": [0.1, 0.01, 0.001]}],
          "max_total_runs": 4, "max_concurrent_runs": 1}


def test_a_running_sweep_marks_its_best_trial_so_far_and_applies_its_values(owner_client, users):
    doc = pipeline([node("a", "toy_add", amount=1)], [])
    doc["parameters"] = [{"name": "lr", "type": "float", "default": 0.5}]
    p = Pipeline.objects.create(owner=users["owner"], name="p", draft=doc)
    sweep = Sweep.objects.create(owner=users["owner"], pipeline=p, name="lr", snapshot=doc, config=CONFIG,
                                 study_name="s-best", status="running")
    for number, lr, status, value in [(0, 0.1, "completed", 0.7), (1, 0.01, "early_terminated", 0.9),
                                      (2, 0.001, "failed", None), (3, 0.5, "queued", None)]:
        Trial.objects.create(sweep=sweep, number=number, optuna_trial_id=number, values={"lr": lr}, status=status, value=value)
    body = owner_client.get(f"/api/sweeps/{sweep.id}").json()
    assert body["status"] == "running" and body["best_trial"] == 1
    assert [t["number"] for t in body["trials"] if t["best"]] == [1]
    assert owner_client.get("/api/sweeps").json()["sweeps"][0]["best_trial"] == 1
    r = owner_client.post(f"/api/sweeps/{sweep.id}/apply-best")
    assert r.status_code == 200, r.json()
    p.refresh_from_db()
    assert p.draft["parameters"][0]["default"] == 0.01


def test_a_running_sweep_with_no_trial_ended_yet_has_no_best(owner_client, users):
    p = Pipeline.objects.create(owner=users["owner"], name="p", draft=pipeline([node("a", "toy_add")], []))
    sweep = Sweep.objects.create(owner=users["owner"], pipeline=p, name="lr", snapshot=p.draft, config=CONFIG,
                                 study_name="s-none", status="running")
    for number in range(4):
        Trial.objects.create(sweep=sweep, number=number, optuna_trial_id=number, values={"lr": 0.1},
                             status="running" if number == 0 else "failed")
    assert owner_client.get(f"/api/sweeps/{sweep.id}").json()["best_trial"] is None
    r = owner_client.post(f"/api/sweeps/{sweep.id}/apply-best")
    assert r.status_code == 400 and "no best trial (yet)" in r.json()["error"]
