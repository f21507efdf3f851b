"""Sweeps on real Celery workers: trials as runs, shared upstream nodes computed once, concurrency
limits, early termination by each policy, cancel, bad configurations, owner-only access.

`make test`'s production pass (PostgreSQL, Redis) runs the tests marked `production`: those whose
outcome depends on the database or the broker (trials of two workers sharing a node, the
concurrency limit on Redis, a policy reading the other worker's trial from the study, cancel,
live events, the Optuna study's rows deleted with their sweep). The others check what the sweep
logic decides (configurations refused, a kept epoch, the other two policies, max duration, the
commands): the same code on either backend, run by the embedded pass only."""
import io
import time

import pytest
from django.conf import settings
from django.utils import timezone

from designer.engine import statuses as st
from designer.pipelines.models import NodeRun, Pipeline, Run, Sweep, Trial
from designer.pipelines.sweeps import service as sweeps
from tests import machine
from tests.conftest import TEST_DATA
from tests.pipes import link, node, out_path, pipeline
from tests.workers import CeleryWorker, registered, stop_all

pytestmark = pytest.mark.timeout(600)

GOOD, BETTER, POOR = 0.005, 0.01, 0.00001  # a rate 1000x too small scores 1000x lower (tests/toy_modules.py ToyTuning)


@pytest.fixture(scope="module")
def two_workers(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock():
        workers = [CeleryWorker(name, concurrency=1, log_dir=TEST_DATA) for name in ("sweep-a", "sweep-b")]
        for w in workers:
            w.wait_ready()
    yield workers
    stop_all(workers)


@pytest.fixture
def workers(two_workers, transactional_db):
    """Both workers registered (a test's database flush removes their rows until the next beat)."""
    return registered(two_workers)


def tuning_pipeline(epochs=6, epoch_seconds=0.2, source_sleep=1.0, source_value=1):
    """src ("Convert": slow, swept by nothing) -> fit (its Learning rate bound to `lr`)."""
    doc = pipeline([node("src", "toy_source", value=source_value, sleep=source_sleep),
                    node("fit", "toy_tuning", epochs=epochs, epoch_seconds=epoch_seconds)],
                   [link("src", "fit")], name="tuning")
    doc["parameters"] = [{"name": "lr", "type": "float", "default": 0.01, "min": 1e-9, "max": 1.0},
                         {"name": "batch", "type": "int", "default": 16, "min": 1, "max": 1024}]
    doc["nodes"][1]["bindings"] = {"learning_rate": "lr", "batch_size": "batch"}
    return doc


def config(space, sampling="grid", policy=None, total=4, concurrent=2, **extra):
    return {"sampling": sampling, "parameter_space": space, "policy": policy or {"type": "NoTerminationPolicy"},
            "primary_metric_name": "score", "primary_metric_goal": "maximize", "max_total_runs": total,
            "max_concurrent_runs": concurrent, **extra}


def finished(sweep: Sweep, timeout=240) -> Sweep:
    """Wait for the sweep to end, moved on by the product alone: each trial's end (signals.run_finished
    on the worker that finished it) and the workers' heartbeat; the test never moves it itself.
    `timeout`: seconds on the reference machine (tests/machine.py)."""
    deadline = time.monotonic() + machine.patience(timeout)
    while True:
        sweep.refresh_from_db()
        if sweep.finished:
            return sweep
        assert time.monotonic() < deadline, f"sweep not finished: {sweep.status} {list(sweep.trials.values('number', 'status'))}"
        time.sleep(0.2)


@pytest.mark.production
def test_a_grid_of_four_gives_four_runs_the_right_best_and_runs_the_shared_node_once(workers, users):
    space = [{"name": "lr", "expression": "choice", "values": [0.001, 0.002, GOOD, BETTER]}]
    sweep = finished(sweeps.start(users["owner"], tuning_pipeline(), config(space, total=10)))
    trials = list(sweep.trials.select_related("run"))
    assert sweep.status == st.COMPLETED
    assert sorted(t.values["lr"] for t in trials) == [0.001, 0.002, GOOD, BETTER]  # the grid, once each
    assert all(t.status == st.COMPLETED and t.run.status == st.COMPLETED for t in trials)
    assert sweep.best_trial.values == {"lr": BETTER}
    assert sweep.best_trial.value == pytest.approx(1 - 0.5 / 6)
    assert "grid is exhausted" in sweep.message and "best trial" in sweep.message
    src = NodeRun.objects.filter(run__trial__sweep=sweep, node_id="src")
    assert src.filter(status=st.COMPLETED).count() == 1  # "Convert" ran once for the whole sweep
    assert src.filter(status=st.REUSED).count() == 3
    assert {t.run.parameter_values["lr"] for t in trials} == {0.001, 0.002, GOOD, BETTER}  # frozen in each run


def test_a_trial_scores_the_epoch_whose_model_its_training_kept_not_its_best_epoch(workers, users, owner_client):
    """Train PyTorch Model keeps the epoch of lowest validation loss; a sweep on its accuracy ranks
    the models the trials hand on (what registering the best trial gives), not their peaks."""
    doc = tuning_pipeline(epochs=4, epoch_seconds=0, source_sleep=0)
    doc["nodes"][1]["parameters"]["keep_epoch"] = 2  # its score rises every epoch: the peak is epoch 4's
    space = [{"name": "lr", "expression": "choice", "values": [GOOD, BETTER]}]
    sweep = finished(sweeps.start(users["owner"], doc, config(space, total=2)))
    trials = {t.values["lr"]: t for t in sweep.trials.all()}
    for lr, t in trials.items():
        assert (t.status, t.kept_step, t.epochs) == (st.COMPLETED, 2, 4)
        assert t.value == pytest.approx(min(1.0, lr * 100) * (1 - 0.5 / 2))  # epoch 2's, not epoch 4's
    assert sweep.best_trial.values == {"lr": BETTER} and f"score {0.75:.4g} at epoch 2, the model it kept (lr=" in sweep.message
    shown = {t["values"]["lr"]: t for t in owner_client.get(f"/api/sweeps/{sweep.id}").json()["trials"]}
    assert shown[BETTER]["kept_step"] == 2 and shown[BETTER]["value"] == pytest.approx(0.75)
    assert shown[BETTER]["peak"] == pytest.approx(1 - 0.5 / 4)
    # the same sweep again: each training node is reused, its kept epoch read from the run that trained it
    again = finished(sweeps.start(users["owner"], doc, config(space, total=2)))
    assert set(NodeRun.objects.filter(run__trial__sweep=again, node_id="fit").values_list("status", flat=True)) == {st.REUSED}
    assert [(t.kept_step, round(t.value, 6)) for t in again.trials.order_by("number")] == \
        [(2, round(trials[t.values["lr"]].value, 6)) for t in again.trials.order_by("number")]
    # and the sweep page says so: its epochs and figures are those of the run that trained it
    shown = {t["values"]["lr"]: t for t in owner_client.get(f"/api/sweeps/{again.id}").json()["trials"]}
    assert shown[BETTER]["reused_from_run"] == trials[BETTER].run_id and shown[GOOD]["reused_from_run"] == trials[GOOD].run_id
    assert {t["reused_from_run"] for t in owner_client.get(f"/api/sweeps/{sweep.id}").json()["trials"]} == {None}


POLICIES = [{"type": "BanditPolicy", "evaluation_interval": 1, "slack_factor": 0.2, "delay_evaluation": 1},
            {"type": "MedianStoppingPolicy", "evaluation_interval": 1, "delay_evaluation": 1},
            {"type": "TruncationSelectionPolicy", "evaluation_interval": 1, "truncation_percentage": 50,
             "delay_evaluation": 1}]


# one policy on the production services: how the policies decide does not depend on them
@pytest.mark.parametrize("policy", [pytest.param(p, marks=[pytest.mark.production] * (p["type"] == "MedianStoppingPolicy"))
                                    for p in POLICIES], ids=[p["type"] for p in POLICIES])
def test_each_policy_stops_a_poor_trial_before_its_last_epoch_and_keeps_what_it_had(workers, users, policy):
    """Whatever order the trials run in (two at a time, or one after another when one worker takes
    both), a poor trial meets a better one and is stopped; the good one runs every epoch."""
    epochs = 16  # 4.8 s: room for the policy's stop to reach the module on a busy machine
    space = [{"name": "lr", "expression": "choice", "values": [BETTER, POOR, POOR / 2]}]
    sweep = finished(sweeps.start(users["owner"], tuning_pipeline(epochs=epochs, epoch_seconds=0.3, source_sleep=0,
                                                                  source_value=10 + POLICIES.index(policy)),
                                  config(space, policy=policy, total=3, concurrent=2)))
    good = sweep.trials.get(values={"lr": BETTER})
    assert good.status == st.COMPLETED and good.epochs == epochs and sweep.best_trial == good
    stopped = list(sweep.trials.filter(status=st.EARLY_TERMINATED))
    assert stopped and good not in stopped, list(sweep.trials.values("values", "status", "epochs"))
    for poor in stopped:
        assert poor.stopped_at_step < epochs and poor.epochs < epochs
        fit = NodeRun.objects.get(run=poor.run, node_id="fit")
        assert fit.status == st.COMPLETED and (out_path(fit.outputs["out"]) / "value.txt").is_file()  # kept its best so far
        rate = poor.values["lr"]
        assert poor.value == pytest.approx(max(rate * 100 * (1 - 0.5 / e) for e in range(1, poor.epochs + 1)))
        log = "".join(f.read_text() for f in (out_path(fit.outputs["out"]).parent / "logs").iterdir())
        assert f"early terminated after epoch {poor.epochs} of {epochs}" in log


@pytest.mark.production
@pytest.mark.skipif(settings.CELERY_BROKER_URL.startswith("sqla"),
                    reason="the embedded broker lets a worker reserve several nodes (settings.py): one of two "
                           "workers may take both trials; `make test` runs this on Redis")
def test_random_sampling_runs_two_trials_at_a_time_on_two_workers_and_never_more(workers, users):
    space = [{"name": "lr", "expression": "uniform", "values": [0.001, 0.01]}]
    sweep = finished(sweeps.start(users["owner"], tuning_pipeline(epochs=4, epoch_seconds=1.0, source_value=2),
                                  config(space, sampling="random", total=4, concurrent=2, seed=3)))
    fits = list(NodeRun.objects.filter(run__trial__sweep=sweep, node_id="fit").order_by("started_at"))
    assert len(fits) == 4 and all(f.status == st.COMPLETED for f in fits)
    assert all(0.001 <= t.values["lr"] <= 0.01 for t in sweep.trials.all())
    overlapping = [(a, b) for i, a in enumerate(fits) for b in fits[i + 1:] if a.started_at < b.finished_at and b.started_at < a.finished_at]
    assert overlapping, "no two trials ran at the same time"
    assert len({f.worker_id for f in fits}) == 2  # both workers took trials
    for f in fits:  # never three at once
        at_once = [g for g in fits if g.started_at <= f.started_at < g.finished_at]
        assert len(at_once) <= 2


@pytest.mark.production
def test_cancel_stops_every_trial_and_the_sweep(workers, users, owner_client):
    space = [{"name": "lr", "expression": "choice", "values": [0.001, 0.002, GOOD, BETTER]}]
    sweep = sweeps.start(users["owner"], tuning_pipeline(epochs=200, epoch_seconds=0.5, source_sleep=0, source_value=3),
                         config(space, total=4, concurrent=2))
    deadline = time.monotonic() + 60
    while NodeRun.objects.filter(run__trial__sweep=sweep, node_id="fit", status=st.RUNNING).count() < 2:
        assert time.monotonic() < deadline, "two trials did not start"
        time.sleep(0.1)
    body = owner_client.post(f"/api/sweeps/{sweep.pk}/cancel").json()
    sweep = finished(sweep, timeout=60)
    assert sweep.status == st.CANCELLED and "cancelled by the user" in sweep.message
    assert body["id"] == sweep.pk
    assert set(sweep.trials.values_list("status", flat=True)) == {st.CANCELLED}
    assert sweep.trials.count() == 2  # no trial started after the cancel
    deadline = time.monotonic() + 30
    while NodeRun.objects.filter(run__trial__sweep=sweep, status__in=st.ACTIVE).exists():
        assert time.monotonic() < deadline, "a node of a cancelled trial still runs"
        time.sleep(0.1)


def test_max_duration_ends_the_sweep_and_its_trials(workers, users):
    space = [{"name": "lr", "expression": "choice", "values": [0.001, 0.002]}]
    sweep = sweeps.start(users["owner"], tuning_pipeline(epochs=200, epoch_seconds=0.5, source_sleep=0, source_value=4),
                         config(space, total=2, concurrent=2, max_duration_minutes=60))
    Sweep.objects.filter(pk=sweep.pk).update(deadline=timezone.now())  # an hour later, as far as the sweep knows
    sweep = finished(sweep, timeout=60)
    assert "its time ran out (max_duration_minutes: 60)" in sweep.message
    assert set(sweep.trials.values_list("status", flat=True)) == {st.CANCELLED}


def test_a_trial_whose_sampled_value_no_module_accepts_fails_named(db, users):
    doc = tuning_pipeline()
    del doc["parameters"][0]["min"]  # normal() may go below 0, which Learning rate refuses
    space = [{"name": "lr", "expression": "normal", "values": [-1.0, 0.001]}]
    sweep = finished(sweeps.start(users["owner"], doc, config(space, sampling="random", total=2, concurrent=1)), timeout=30)
    assert sweep.status == st.FAILED
    errors = list(sweep.trials.values_list("error", flat=True))
    assert len(errors) == 2 and all("Learning rate" in e for e in errors), errors
    assert not Trial.objects.filter(sweep=sweep, run__isnull=False).exists()


# ---------------------------------------------------------------- the API: refusals, owners, parameters


def saved(client, doc) -> int:
    r = client.post("/api/pipelines", {"name": "tuning", "draft": doc}, content_type="application/json")
    assert r.status_code == 201, r.content
    return r.json()["id"]


BAD = [  # (what is wrong, the config change, a text the user must read)
    ("unknown expression", {"parameter_space": [{"name": "lr", "expression": "logarithmic", "values": [1, 2]}]}, "logarithmic"),
    ("empty choice", {"parameter_space": [{"name": "lr", "expression": "choice", "values": []}]}, "choice"),
    ("low > high", {"parameter_space": [{"name": "lr", "expression": "uniform", "values": [0.5, 0.1]}],
                    "sampling": "random"}, "parameter_space[0] (lr)"),
    ("unknown metric", {"primary_metric_name": "accuracy"}, "score"),
    ("unknown parameter", {"parameter_space": [{"name": "momentum", "expression": "choice", "values": [0.9]}]}, "momentum"),
    ("max_concurrent_runs 0", {"max_concurrent_runs": 0}, "max_concurrent_runs"),
    ("grid with a continuous expression", {"parameter_space": [{"name": "lr", "expression": "uniform", "values": [0.001, 0.01]}]}, "grid"),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("what", "change", "named"), BAD, ids=[b[0] for b in BAD])
def test_every_bad_configuration_is_refused_and_named(owner_client, what, change, named):
    pk = saved(owner_client, tuning_pipeline())
    space = [{"name": "lr", "expression": "choice", "values": [0.001, 0.01]}]
    body = {"pipeline": pk, "config": {**config(space), **change}}
    r = owner_client.post("/api/sweeps", body, content_type="application/json")
    assert r.status_code == 400, r.content
    texts = " | ".join(p["text"] for p in r.json()["problems"])
    assert named in texts, texts
    assert not Sweep.objects.exists()


@pytest.mark.django_db
def test_a_yaml_configuration_with_several_problems_names_each(owner_client):
    pk = saved(owner_client, tuning_pipeline())
    text = ("sampling: grid\nparameter_space:\n  - {name: lr, expression: uniform, values: [0.5, 0.1]}\n"
            "primary_metric_name: top1\nprimary_metric_goal: maximize\nmax_total_runs: 4\nmax_concurrent_runs: 0\n")
    r = owner_client.post("/api/sweeps", {"pipeline": pk, "config_yaml": text}, content_type="application/json")
    assert r.status_code == 400
    texts = [p["text"] for p in r.json()["problems"]]
    assert len(texts) >= 4, texts  # low > high, grid with uniform, unknown metric, max_concurrent_runs 0
    assert any("top1" in t for t in texts) and any(t.startswith("max_concurrent_runs") for t in texts)


@pytest.mark.django_db
def test_a_stranger_gets_404_on_a_sweep(owner_client, stranger_client, users):
    sweep = Sweep.objects.create(owner=users["owner"], name="mine", snapshot=tuning_pipeline(), study_name="s-404", status="completed",
                                 config=config([{"name": "lr", "expression": "choice", "values": [0.01]}]))
    for method, url in (("get", f"/api/sweeps/{sweep.pk}"), ("post", f"/api/sweeps/{sweep.pk}/cancel"),
                        ("post", f"/api/sweeps/{sweep.pk}/apply-best")):
        assert getattr(stranger_client, method)(url).status_code == 404, url
    assert stranger_client.get("/api/sweeps").json()["sweeps"] == []
    assert owner_client.get(f"/api/sweeps/{sweep.pk}").status_code == 200
    assert stranger_client.post("/api/sweeps", {"pipeline": saved(owner_client, tuning_pipeline()), "config": sweep.config},
                                content_type="application/json").status_code == 404


@pytest.mark.django_db
def test_a_run_is_submitted_with_parameter_values_frozen_in_its_snapshot(owner_client):
    pk = saved(owner_client, tuning_pipeline(epochs=1, epoch_seconds=0, source_sleep=0))
    r = owner_client.post(f"/api/pipelines/{pk}/runs", {"parameters": {"lr": -1, "batch": 2.5, "nope": 1}},
                          content_type="application/json")
    assert r.status_code == 400
    texts = " | ".join(p["text"] for p in r.json()["problems"])
    assert "'nope'" in texts and "'batch' (int): expected a whole number" in texts and "'lr': -1 is out of range" in texts, texts
    r = owner_client.post(f"/api/pipelines/{pk}/runs", {"parameters": {"lr": 0.02}}, content_type="application/json")
    assert r.status_code == 201, r.content
    run = r.json()
    assert run["parameters"] == {"lr": 0.02, "batch": 16} and run["trial"] is None
    from designer.pipelines.models import Run

    snapshot = Run.objects.get(pk=run["id"]).snapshot
    fit = next(n for n in snapshot["nodes"] if n["id"] == "fit")
    assert fit["parameters"]["learning_rate"] == 0.02 and fit["bindings"]["learning_rate"] == "lr"
    listed = owner_client.get(f"/api/pipelines/{pk}/runs").json()["runs"]
    assert listed[0]["parameters"] == {"lr": 0.02, "batch": 16}


# ---------------------------------------------------------------- headless


def write(tmp_path, doc, config_text):
    import json

    (tmp_path / "p.json").write_text(json.dumps(doc))
    (tmp_path / "sweep.yml").write_text(config_text)
    return str(tmp_path / "p.json"), str(tmp_path / "sweep.yml")


SWEEP_YML = """sampling: grid
parameter_space:
  - name: lr
    expression: choice
    values: [0.002, 0.01]
policy:
  type: NoTerminationPolicy
primary_metric_name: score
primary_metric_goal: MAXIMIZE
max_total_runs: 2
max_concurrent_runs: 2
"""


def test_manage_py_sweep_prints_each_trial_and_the_best(workers, users, tmp_path):
    from django.core.management import call_command

    pipeline_file, config_file = write(tmp_path, tuning_pipeline(epochs=2, epoch_seconds=0.1, source_value=20), SWEEP_YML)
    out = io.StringIO()
    call_command("sweep", pipeline_file, config=config_file, owner="owner", stdout=out)
    text = out.getvalue()
    assert "grid sampling of lr, up to 2 trial(s), 2 at a time, maximize score" in text
    assert "trial 0 completed" in text and "trial 1 completed" in text
    assert "best trial 1: score 0.75 (lr=0.01)" in text, text
    # its trials open on the canvas of the pipeline saved from the file (its Runs tab lists them)
    assert len({r.pipeline_id for r in Run.objects.all()} - {None}) == 1 and not Run.objects.filter(pipeline=None).exists()


def test_manage_py_sweep_exits_non_zero_when_every_trial_failed(workers, users, tmp_path):
    from django.core.management import call_command
    from django.core.management.base import CommandError

    doc = tuning_pipeline(epochs=1, epoch_seconds=0, source_value=21)
    doc["nodes"].append(node("broken", "toy_add", fail=True))
    doc["links"].append(link("src", "broken"))
    pipeline_file, config_file = write(tmp_path, doc, SWEEP_YML)
    out = io.StringIO()
    with pytest.raises(CommandError) as e:
        call_command("sweep", pipeline_file, config=config_file, owner="owner", stdout=out)
    assert e.value.returncode == 1 and "no trial succeeded" in str(e.value)
    assert out.getvalue().count("failed (run") == 2 and "asked to fail" in out.getvalue()


@pytest.mark.django_db
def test_manage_py_sweep_names_every_problem_of_a_bad_configuration(users, tmp_path):
    from django.core.management import call_command
    from django.core.management.base import CommandError

    pipeline_file, config_file = write(tmp_path, tuning_pipeline(), SWEEP_YML.replace("choice", "uniform").replace(
        "max_concurrent_runs: 2", "max_concurrent_runs: 0"))
    with pytest.raises(CommandError) as e:
        call_command("sweep", pipeline_file, config=config_file, owner="owner")
    assert "max_concurrent_runs" in str(e.value) and "grid" in str(e.value)
    assert not Pipeline.objects.exists()  # nothing of a file that cannot be swept is kept


@pytest.mark.django_db
def test_run_pipeline_takes_param_values_and_names_a_bad_one(users, tmp_path):
    from django.core.management import call_command
    from django.core.management.base import CommandError

    from designer.pipelines.models import Run

    pipeline_file, _ = write(tmp_path, tuning_pipeline(epochs=1, epoch_seconds=0, source_sleep=0), "")
    out = io.StringIO()
    call_command("run_pipeline", pipeline_file, param=["lr=0.02", "batch=8"], inline=True, owner="owner", stdout=out)
    assert "with lr=0.02, batch=8" in out.getvalue()
    assert Run.objects.get().parameter_values == {"lr": 0.02, "batch": 8}
    with pytest.raises(CommandError, match="'batch' is an int"):
        call_command("run_pipeline", pipeline_file, param=["batch=2.5"], inline=True, owner="owner")
    with pytest.raises(CommandError, match="no parameter 'momentum'.*lr, batch"):
        call_command("run_pipeline", pipeline_file, param=["momentum=0.9"], inline=True, owner="owner")


@pytest.mark.production
def test_the_api_sweeps_a_saved_pipeline_shows_trials_live_and_applies_the_best_values(workers, owner_client):
    pk = saved(owner_client, tuning_pipeline(epochs=3, epoch_seconds=0.1, source_value=30))
    space = [{"name": "lr", "expression": "choice", "values": [0.002, BETTER]}]
    r = owner_client.post("/api/sweeps", {"pipeline": pk, "config": config(space, total=2), "parameters": {"batch": 32}},
                          content_type="application/json")
    assert r.status_code == 201, r.content
    body = r.json()
    assert body["swept"] == ["lr"] and body["base_values"] == {"batch": 32} and len(body["trials"]) == 2
    sweep = finished(Sweep.objects.get(pk=body["id"]))
    body = owner_client.get(f"/api/sweeps/{sweep.pk}").json()
    assert body["status"] == "completed" and body["best_trial"] == 1
    best = next(t for t in body["trials"] if t["best"])
    assert best["values"] == {"lr": BETTER} and best["epochs"] == 3 and [s for s, _ in best["curve"]] == [1, 2, 3]
    assert all(t["run"] and t["duration"] is not None for t in body["trials"])
    run = owner_client.get(f"/api/runs/{best['run']}").json()
    assert run["trial"] == {"sweep": sweep.pk, "number": 1, "status": "completed", "best": True}
    assert run["parameters"] == {"lr": BETTER, "batch": 32}
    revision = owner_client.get(f"/api/pipelines/{pk}").json()["revision"]
    applied = owner_client.post(f"/api/sweeps/{sweep.pk}/apply-best").json()["pipeline"]
    assert applied["revision"] == revision + 1
    assert {p["name"]: p["default"] for p in applied["draft"]["parameters"]} == {"lr": BETTER, "batch": 32}
    assert owner_client.get("/api/sweeps").json()["sweeps"][0]["id"] == sweep.pk


def test_cancel_ends_distributed_trials_and_leaves_no_process(workers, users):
    """Two trials, each a 1 x 2 distributed node (torchrun and two ranks) beside a short training
    node; cancelled once a trial's processes run (both, or one while the other waits for a worker)."""
    from tests.runs.test_distributed import leftover_processes

    doc = tuning_pipeline(epochs=1, epoch_seconds=0, source_sleep=0, source_value=40)
    dist = node("dist", "toy_distributed", steps=100000, step_seconds=0.1)
    dist["run_settings"] = {"node_count": 1, "process_count_per_node": 2}
    dist["bindings"] = {"fail_at_step": "batch"}  # a distinct value per trial: no reuse between them
    doc["nodes"].append(dist)
    space = [{"name": "batch", "expression": "choice", "values": [500, 501]}]
    sweep = sweeps.start(users["owner"], doc, config(space, total=2, concurrent=2))
    deadline = time.monotonic() + 90
    while sweep.trials.count() < 2 or not any(leftover_processes(t.run) for t in sweep.trials.select_related("run")):
        assert time.monotonic() < deadline, list(NodeRun.objects.filter(run__trial__sweep=sweep).values("node_id", "status", "error"))
        time.sleep(0.2)
    sweeps.cancel(sweep)
    sweep = finished(sweep, timeout=90)
    assert sweep.status == st.CANCELLED
    assert set(sweep.trials.values_list("status", flat=True)) == {st.CANCELLED}
    deadline = time.monotonic() + 30
    while any(leftover_processes(t.run) for t in sweep.trials.select_related("run")):
        assert time.monotonic() < deadline, [leftover_processes(t.run) for t in sweep.trials.select_related("run")]
        time.sleep(0.2)


@pytest.mark.production
def test_a_deleted_users_sweeps_take_their_optuna_studies_with_them(db, users, django_capture_on_commit_callbacks):
    import optuna

    from designer.engine import tuning
    from designer.pipelines.sweeps import studies

    doc = tuning_pipeline()
    del doc["parameters"][0]["min"]  # a sweep whose trials fail at once: no worker needed
    space = [{"name": "lr", "expression": "normal", "values": [-1.0, 0.001]}]
    mine = finished(sweeps.start(users["owner"], doc, config(space, sampling="random", total=1, concurrent=1)), timeout=30)
    theirs = finished(sweeps.start(users["stranger"], doc, config(space, sampling="random", total=1, concurrent=1)), timeout=30)
    storage = tuning.storage(studies.storage_url())
    names = set(optuna.get_all_study_names(storage))
    assert {mine.study_name, theirs.study_name} <= names
    with django_capture_on_commit_callbacks(execute=True):
        users["owner"].delete()  # as the admin does: the sweeps go with their owner
    assert not Sweep.objects.filter(pk=mine.pk).exists()
    names = set(optuna.get_all_study_names(storage))
    assert mine.study_name not in names and theirs.study_name in names  # the other user's study stays


@pytest.mark.production
def test_a_finished_sweep_is_deleted_by_its_owner_only_and_a_running_one_is_cancelled_first(
        db, users, owner_client, stranger_client, django_capture_on_commit_callbacks):
    import optuna

    from designer.engine import tuning
    from designer.pipelines.sweeps import studies

    space = [{"name": "lr", "expression": "choice", "values": [0.01, 0.02]}]
    sweep = sweeps.start(users["owner"], tuning_pipeline(), config(space, total=2, concurrent=1))  # no worker: it waits
    trial_runs = list(sweep.trials.exclude(run=None).values_list("run_id", flat=True))
    assert trial_runs
    r = owner_client.delete(f"/api/sweeps/{sweep.id}")
    assert r.status_code == 409 and r.json()["error"] == f"the sweep 'tuning' is {sweep.status}: cancel it first, then delete it"
    assert stranger_client.delete(f"/api/sweeps/{sweep.id}").status_code == 404
    with django_capture_on_commit_callbacks(execute=True):  # the trials' runs end, then the sweep
        owner_client.post(f"/api/sweeps/{sweep.id}/cancel")
    assert finished(sweep, timeout=30).status == st.CANCELLED
    with django_capture_on_commit_callbacks(execute=True):
        r = owner_client.delete(f"/api/sweeps/{sweep.id}")
    assert r.status_code == 200 and r.json() == {"deleted": sweep.id}
    assert owner_client.get(f"/api/sweeps/{sweep.id}").status_code == 404
    assert sweep.study_name not in optuna.get_all_study_names(tuning.storage(studies.storage_url()))
    assert set(Run.objects.filter(pk__in=trial_runs).values_list("pk", flat=True)) == set(trial_runs)  # the runs stay
