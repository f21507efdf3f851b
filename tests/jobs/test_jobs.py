"""The Jobs page and what it lists: each run's name, experiment, tags, source and final metrics,
recorded by the product as it is submitted (the page, the API, run_pipeline, a sweep) and ended;
the page's filters, sort, pages of 50, and only the user's own jobs. Runs are real (inline on the
toy modules) where their metrics matter; the 120 rows of the paging test are stored directly.
Marked production: what the database answers (JSON keys read in SQL, a UNION sorted and cut)."""
import io
import json
import re
from datetime import timedelta
from importlib import import_module

import pytest
from django.apps import apps
from django.core.management import call_command
from django.utils import timezone

from designer.pipelines.accounts import tokens
from designer.pipelines.models import Pipeline, Run, Sweep
from designer.pipelines.runs import labels
from designer.pipelines.runs import service as runs
from tests.pipes import link, node, pipeline

pytestmark = pytest.mark.django_db


def trainer(epochs=3, name="trainer"):
    return pipeline([node("t", "toy_training", epochs=epochs, epoch_seconds=0), node("src", "toy_source", value=1),
                     node("add", "toy_add", amount=1)], [link("src", "add")], name=name)


def saved(user, name="trainer", epochs=3):
    return Pipeline.objects.create(owner=user, name=name, draft=trainer(epochs, name))


def submit(owner_client, p, **body):
    return owner_client.post(f"/api/pipelines/{p.id}/runs", body, content_type="application/json")


def test_an_epoch_logged_again_by_a_resumed_training_counts_once_with_its_later_value():
    from designer.pipelines.runs.final_metrics import summarise

    # epochs 1-3, the worker lost after epoch 3 with its last checkpoint at epoch 2: 3 again, then 4
    logged = [("t", {"name": "loss", "value": v, "step": s}) for s, v in ((1, 0.9), (2, 0.5), (3, 0.1), (3, 0.3), (4, 0.2))]
    assert summarise(logged) == {"loss": {"last": 0.2, "best": 0.2, "node": "t", "steps": 4}}
    # stepless values all count
    assert summarise([("t", {"name": "acc", "value": 0.5}), ("t", {"name": "acc", "value": 0.4})])["acc"]["steps"] == 2


@pytest.mark.production
def test_a_finished_run_carries_its_final_metrics_last_and_best(users, owner_client):
    p = saved(users["owner"], epochs=4)
    run = runs.submit(users["owner"], p.draft, pipeline=p, inline=True)
    data = owner_client.get(f"/api/runs/{run.id}").json()
    assert data["metrics"]["loss"] == {"last": 0.25, "best": 0.25, "node": "t", "steps": 4}
    assert data["metrics"]["accuracy"] == {"last": 0.875, "best": 0.875, "node": "t", "steps": 4}
    assert data["metrics"]["total"] == {"last": 2, "best": None, "node": "add", "steps": 1}  # no better way for a sum
    # a second run reuses every node: it shows the metrics of the run that computed them
    again = runs.submit(users["owner"], p.draft, pipeline=p, inline=True)
    assert owner_client.get(f"/api/runs/{again.id}").json()["metrics"] == data["metrics"]
    listed = owner_client.get("/api/runs").json()["runs"]
    assert listed[0]["metrics"]["loss"]["last"] == 0.25


@pytest.mark.production
def test_the_api_takes_a_name_an_experiment_and_tags_and_records_where_the_run_came_from(users, owner_client, client):
    p = saved(users["owner"])
    r = submit(owner_client, p, name="lr 0.01 try", experiment="digits-lr", tags={"owner": "ana", "lr": 0.01},
               source="headless")  # claimed by the body: ignored
    assert r.status_code == 201, r.content
    data = r.json()
    assert (data["name"], data["experiment"], data["tags"], data["source"]) == ("lr 0.01 try", "digits-lr",
                                                                               {"owner": "ana", "lr": "0.01"}, "page")
    # a script signed in by a personal token is the API; without a name or experiment, the pipeline's
    secret = tokens.create(users["owner"], "ci")[1]
    r = client.post(f"/api/pipelines/{p.id}/runs", {"tags": ["baseline"]}, content_type="application/json",
                    HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert r.status_code == 201, r.content
    assert {k: r.json()[k] for k in ("name", "experiment", "tags", "source")} == {
        "name": "trainer", "experiment": "trainer", "tags": {"baseline": ""}, "source": "api"}


@pytest.mark.parametrize("body,named", [
    ({"name": ""}, "`name` is empty"),
    ({"name": 7}, "`name` is text"),
    ({"name": "x" * 201}, "`name` has 201 characters: at most 200"),
    ({"experiment": "a\nb"}, "`experiment` holds a control character"),
    ({"experiment": "e" * 300}, "`experiment` has 300 characters"),
    ({"tags": "a=b"}, "`tags` is an object"),
    ({"tags": {f"k{i}": "v" for i in range(21)}}, "`tags` has 21 tags: at most 20"),
    ({"tags": {"k" * 65: "v"}}, "`tags: a key` has 65 characters"),
    ({"tags": {"k": "v" * 257}}, "`tags: the value of 'k'` has 257 characters"),
    ({"tags": {"k": {"nested": 1}}}, "the value of 'k' is text (or a number)"),
    ({"tags": {" ": "v"}}, "`tags: a key` is empty"),
])
def test_a_bad_name_experiment_or_tag_is_a_400_naming_the_field_and_nothing_is_stored(users, owner_client, body, named):
    p = saved(users["owner"])
    r = submit(owner_client, p, **body)
    assert r.status_code == 400 and r["Content-Type"] == "application/json", r.content
    assert named in r.json()["error"], r.json()
    assert not Run.objects.exists()


def test_run_pipeline_records_a_headless_run_with_its_experiment_and_tags(users, tmp_path):
    f = tmp_path / "trainer.json"
    f.write_text(json.dumps(trainer()))
    call_command("run_pipeline", str(f), "--owner", "owner", "--inline", "--experiment", "nightly", "--tag", "ci=yes",
                 "--tag", "smoke", stdout=io.StringIO())
    run = Run.objects.get()
    assert (run.source, run.experiment, run.tags, run.status) == ("headless", "nightly", {"ci": "yes", "smoke": ""}, "completed")
    assert run.metrics["loss"]["last"] == pytest.approx(1 / 3)


def test_a_sweeps_trials_are_sweep_runs_of_its_experiment_and_tags(users, owner_client):
    doc = pipeline([node("src", "toy_source", value=1), node("fit", "toy_tuning", epochs=2, epoch_seconds=0)],
                   [link("src", "fit")], name="tuning")
    doc["parameters"] = [{"name": "lr", "type": "float", "default": 0.01, "min": 1e-9, "max": 1.0}]
    doc["nodes"][1]["bindings"] = {"learning_rate": "lr"}
    p = Pipeline.objects.create(owner=users["owner"], name="tuning", draft=doc)
    config = {"sampling": "grid", "parameter_space": [{"name": "lr", "expression": "choice", "values": [0.01, 0.005]}],
              "policy": {"type": "NoTerminationPolicy"}, "primary_metric_name": "score", "primary_metric_goal": "maximize",
              "max_total_runs": 2, "max_concurrent_runs": 2}
    r = owner_client.post("/api/sweeps", {"pipeline": p.id, "config": config, "experiment": "tuning", "tags": {"team": "cv"}},
                          content_type="application/json")
    assert r.status_code == 201, r.content
    assert (r.json()["experiment"], r.json()["tags"], r.json()["source"]) == ("tuning", {"team": "cv"}, "page")
    trial_runs = Run.objects.filter(trial__sweep_id=r.json()["id"])
    assert trial_runs.count() == 2
    assert {(t.source, t.experiment, tuple(t.tags.items())) for t in trial_runs} == {("sweep", "tuning", (("team", "cv"),))}
    bad = owner_client.post("/api/sweeps", {"pipeline": p.id, "config": config, "tags": {"t": "x" * 300}},
                            content_type="application/json")
    assert bad.status_code == 400 and "`tags: the value of 't'` has 300 characters" in bad.json()["error"]


def test_the_migration_gives_older_runs_their_pipelines_name_an_unknown_source_and_their_metrics(users):
    p = saved(users["owner"], name="older")
    run = runs.submit(users["owner"], p.draft, pipeline=p, inline=True)
    Run.objects.filter(pk=run.pk).update(experiment="", source="unknown", metrics={})
    import_module("designer.pipelines.migrations.0021_jobs").forwards(apps, None)
    run.refresh_from_db()
    assert (run.experiment, run.source, run.metrics["loss"]["last"]) == ("older", "unknown", pytest.approx(1 / 3))


# ---------------------------------------------------------------- the page


def stored_runs(user, n, **fields):
    """`n` finished runs stored directly (the page only reads rows), run i submitted i minutes ago."""
    now = timezone.now()
    made = Run.objects.bulk_create(Run(owner=user, name=f"run {i:03d}", snapshot={}, status="completed", experiment="bulk",
                                       started_at=now, finished_at=now + timedelta(seconds=i),
                                       metrics={"acc": {"last": i / 1000, "best": i / 1000, "node": "t", "steps": 1}}, **fields)
                                   for i in range(n))
    for i, r in enumerate(made):
        Run.objects.filter(pk=r.pk).update(submitted_at=now - timedelta(minutes=i))
    return made


def ids_on(page_html: str) -> list[str]:
    return re.findall(r'<tr data-kind="run" data-id="(\d+)"', page_html)


@pytest.mark.production
def test_the_jobs_page_shows_50_a_page_newest_first_and_only_the_users_own(users, owner_client, stranger_client):
    made = stored_runs(users["owner"], 120)
    stored_runs(users["stranger"], 3)
    first = owner_client.get("/jobs/").content.decode()
    assert ids_on(first) == [str(r.id) for r in made[:50]]
    assert "120 jobs · page 1 of 3" in first and 'aria-current="page">Jobs</a>' in first
    last = owner_client.get("/jobs/", {"page": 3}).content.decode()
    assert ids_on(last) == [str(r.id) for r in made[100:]]
    assert "3 jobs" in stranger_client.get("/jobs/").content.decode()


@pytest.mark.production
def test_the_jobs_page_filters_by_each_column_and_sorts_by_a_metric(users, owner_client):
    made = stored_runs(users["owner"], 10)
    Run.objects.filter(pk=made[3].pk).update(experiment="special", tags={"team": "cv", "seed": "1"}, source="api", status="failed")
    sweep = Sweep.objects.create(owner=users["owner"], name="a sweep", snapshot={}, config={}, study_name="s1", experiment="special",
                                 source="page")

    def listed(**params):
        html = owner_client.get("/jobs/", params).content.decode()
        return ids_on(html), f'data-kind="sweep" data-id="{sweep.id}"' in html

    assert listed(experiment="special") == ([str(made[3].id)], True)
    assert listed(tag="team=cv") == ([str(made[3].id)], False)
    assert listed(tag="seed") == ([str(made[3].id)], False)
    assert listed(tag="team=nlp") == ([], False)
    assert listed(source="api") == ([str(made[3].id)], False)
    assert listed(status="failed") == ([str(made[3].id)], False)
    assert listed(type="sweep") == ([], True)
    assert listed(q="run 00") == ([str(r.id) for r in made], False)
    assert listed(user="stranger") == ([], False)
    assert listed(metric="acc", op="ge", value="0.008") == ([str(made[8].id), str(made[9].id)], False)
    assert listed(type="run", sort="-metric:acc", columns="acc")[0] == [str(r.id) for r in reversed(made)]
    assert listed(type="run", sort="duration")[0] == [str(r.id) for r in made]
    html = owner_client.get("/jobs/", {"type": "run", "sort": "-metric:acc", "columns": "acc"}).content.decode()
    assert '<td class="num metric" data-metric="acc">0.009</td>' in html


def test_filters_that_cannot_be_used_are_named_and_the_page_still_answers(users, owner_client):
    stored_runs(users["owner"], 2)
    r = owner_client.get("/jobs/", {"status": "nope", "sort": "sideways", "page": "-1", "metric": "acc", "value": "lots",
                                    "q": "x" * 500})
    assert r.status_code == 200
    html = r.content.decode()
    for said in ("status: &#x27;nope&#x27; is none of", "sort: &#x27;sideways&#x27; is not a column", "page: &#x27;-1&#x27;",
                 "metric filter: &#x27;lots&#x27; is not a number", "q: at most 200 characters"):
        assert said in html, said
    assert len(ids_on(html)) == 2


def test_labels_refuse_what_a_database_cannot_store():
    with pytest.raises(labels.LabelError, match="control character"):
        labels.text("a\x00b", "name", 200)
