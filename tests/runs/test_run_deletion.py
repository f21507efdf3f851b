"""Deleting runs: hidden at once, their folders removed once no other run reuses them (retention.py)."""
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.utils import timezone

from designer.pipelines.models import ModelVersion, NodeRun, RegisteredModel, Run, Sweep, Trial
from designer.pipelines.runs import retention
from designer.pipelines.runs import service as runs
from tests.pipes import chain

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.production]
NOW = timedelta(0)  # collect without the grace a live deployment gives a reuse decided just before


def run_folder(run_id) -> Path:
    return Path(settings.ARTIFACT_ROOT) / str(run_id)


def unfinished(owner) -> Run:
    """A run that is not over and that no worker can take (none is sent: a worker another test left
    running on the broker would otherwise finish it)."""
    return Run.objects.create(owner=owner, name="chain", snapshot=chain(2), status="running")


def delete(client, run_id):
    return client.delete(f"/api/runs/{run_id}")


def test_a_deleted_run_is_gone_from_the_api_and_its_folder_from_the_disk(owner_client, users):
    run = runs.submit(users["owner"], chain(3), inline=True)
    assert (run_folder(run.id) / "n2" / "out").is_dir()
    r = delete(owner_client, run.id)
    assert r.status_code == 200 and r.json() == {"deleted": run.id}
    assert owner_client.get(f"/api/runs/{run.id}").status_code == 404
    assert owner_client.get(f"/api/runs/{run.id}/nodes/n1/log").status_code == 404
    assert run.id not in [x["id"] for x in owner_client.get("/api/runs").json()["runs"]]
    assert delete(owner_client, run.id).status_code == 404  # once is enough
    assert run_folder(run.id).is_dir()  # until the collector passes

    assert retention.collect() == 0  # within the grace, nothing is touched
    assert retention.collect(NOW) == 1
    assert not run_folder(run.id).exists()
    assert not Run.everything.filter(pk=run.id).exists() and not NodeRun.objects.filter(run_id=run.id).exists()


def test_outputs_another_run_reused_stay_until_that_run_is_deleted_too(owner_client, users):
    owner = users["owner"]
    first = runs.submit(owner, chain(3), inline=True)
    changed = chain(3)
    changed["nodes"][2]["parameters"]["amount"] = 5
    second = runs.submit(owner, changed, inline=True)  # reuses n0 and n1 of the first run
    assert {nr.node_id: nr.status for nr in second.nodes.all()} == {"n0": "reused", "n1": "reused", "n2": "completed"}

    assert delete(owner_client, first.id).status_code == 200
    retention.collect(NOW)
    # the second run still shows what it reused: outputs, files and the log of the run that made them
    assert sorted(p.name for p in run_folder(first.id).iterdir()) == ["n0", "n1"]
    files = owner_client.get(f"/api/runs/{second.id}/nodes/n1/files").json()
    assert [f["path"] for f in files["outputs"]["out"]] == ["_meta.yaml", "value.txt"]
    log = owner_client.get(f"/api/runs/{second.id}/nodes/n1/log").json()
    assert "Toy add (toy_add v1) starts" in log["text"]
    assert Run.everything.get(pk=first.id).deleted_at is not None  # kept while its nodes are reused

    # a deleted run's outputs are not reused any more: a new run computes them again
    third = runs.submit(owner, chain(3), inline=True)
    assert {nr.status for nr in third.nodes.all()} == {"completed"}

    assert delete(owner_client, second.id).status_code == 200
    assert retention.collect(NOW) == 2
    assert not run_folder(first.id).exists() and not run_folder(second.id).exists()
    assert run_folder(third.id).is_dir() and Run.objects.filter(pk=third.id).exists()


def test_a_run_that_is_not_over_is_refused_and_a_stranger_sees_nothing(owner_client, stranger_client, users):
    run = unfinished(users["owner"])
    r = delete(owner_client, run.id)
    assert r.status_code == 409
    assert r.json()["error"] == f"run #{run.id} 'chain' is running: cancel it first, then delete it"
    assert delete(stranger_client, run.id).status_code == 404
    Run.objects.filter(pk=run.pk).update(status="cancelled")  # cancelled, and over
    assert delete(stranger_client, run.id).status_code == 404
    assert delete(owner_client, run.id).status_code == 200


def test_a_trial_of_a_running_sweep_is_refused_and_the_sweep_keeps_a_deleted_trials_record(owner_client, users):
    owner = users["owner"]
    run = runs.submit(owner, chain(2), inline=True)
    sweep = Sweep.objects.create(owner=owner, name="lr sweep", snapshot={}, config={}, study_name="s-1", status="running")
    trial = Trial.objects.create(sweep=sweep, number=3, optuna_trial_id=3, run=run, values={"lr": 0.1}, value=0.9,
                                 status="completed")
    r = delete(owner_client, run.id)
    assert r.status_code == 409
    assert r.json()["error"] == (f"run #{run.id} is trial 3 of the sweep 'lr sweep', which is running: "
                                 "cancel the sweep (or wait for it to end), then delete the run")
    Sweep.objects.filter(pk=sweep.pk).update(status="completed")
    assert delete(owner_client, run.id).status_code == 200
    trial.refresh_from_db()
    assert trial.run is None and trial.values == {"lr": 0.1} and trial.value == 0.9


def test_a_model_registered_from_a_deleted_run_stays_with_its_lineage(owner_client, users):
    owner = users["owner"]
    run = runs.submit(owner, chain(2), inline=True)
    model = RegisteredModel.objects.create(owner=owner, name="digits")
    version = ModelVersion.objects.create(model=model, version=1, folder="models/1/1/1", status="ready", run=run,
                                          node_id="n1", lineage={"run": {"id": run.id, "name": run.name}})
    assert delete(owner_client, run.id).status_code == 200
    retention.collect(NOW)
    version.refresh_from_db()
    assert version.run is None and version.lineage["run"] == {"id": run.id, "name": "chain"}


def test_runs_ticked_on_the_home_page_are_deleted_and_each_refusal_is_said(owner_client, users):
    owner = users["owner"]
    done = [runs.submit(owner, chain(1), inline=True) for _ in range(2)]
    waiting = unfinished(owner)
    r = owner_client.post("/runs/delete", {"runs": [done[0].id, done[1].id, waiting.id]}, HTTP_HX_REQUEST="true")
    assert r.status_code == 204 and r.headers["HX-Redirect"] == "/"
    page = owner_client.get("/").content.decode()
    assert f"Deleted runs #{done[0].id}, #{done[1].id}." in page
    assert f"Not deleted: run #{waiting.id} &#x27;chain&#x27; is running: cancel it first, then delete it." in page
    assert list(Run.objects.filter(owner=owner)) == [waiting]


def test_a_workers_heartbeat_removes_what_a_deleted_run_leaves(shared_worker, users, owner_client):
    run = runs.submit(users["owner"], chain(2), inline=True)
    assert delete(owner_client, run.id).status_code == 200
    Run.everything.filter(pk=run.id).update(deleted_at=timezone.now() - retention.GRACE)  # as if 10 s ago
    deadline = time.monotonic() + 60
    while run_folder(run.id).exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not run_folder(run.id).exists() and not Run.everything.filter(pk=run.id).exists()


def test_an_administrator_deletes_old_runs_from_the_command_line(users, capsys):
    from django.core.management import CommandError, call_command

    owner, other = users["owner"], users["collaborator"]
    old, recent = runs.submit(owner, chain(1), inline=True), runs.submit(owner, chain(1), inline=True)
    others = runs.submit(other, chain(1), inline=True)
    waiting = unfinished(owner)
    Run.objects.filter(pk__in=[old.pk, others.pk]).update(finished_at=timezone.now() - timedelta(days=40))

    call_command("delete_runs", "--older-than", "30", "--dry-run")
    assert capsys.readouterr().out.splitlines() == [f"would delete run #{old.id} 'chain' of owner, completed",
                                                    f"would delete run #{others.id} 'chain' of collaborator, completed"]
    assert Run.objects.count() == 4

    call_command("delete_runs", "--older-than", "30", "--owner", "owner")
    out = capsys.readouterr()
    assert out.out.splitlines() == [f"deleted run #{old.id} 'chain' of owner, completed"]
    assert "1 run(s) deleted" in out.err
    assert set(Run.objects.all()) == {recent, others, waiting}

    call_command("delete_runs", str(recent.id), str(waiting.id), str(old.id))
    out = capsys.readouterr()
    assert out.out.splitlines() == [f"deleted run #{recent.id} 'chain' of owner, completed"]
    assert f"no run numbered {old.id} (deleted already?)" in out.err
    assert f"not deleted: run #{waiting.id} 'chain' is running: cancel it first, then delete it" in out.err

    with pytest.raises(CommandError, match="name the runs to delete"):
        call_command("delete_runs")
    with pytest.raises(CommandError, match="no user named 'nobody'"):
        call_command("delete_runs", "--older-than", "0", "--owner", "nobody")
