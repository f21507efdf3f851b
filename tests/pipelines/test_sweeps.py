"""Sweeps on real Celery workers: trials as runs, shared upstream nodes computed once, concurrency
limits, early termination by each policy, cancel, bad configurations, owner-only access."""
import time

import pytest
from django.utils import timezone

from designer.engine import statuses as st
from designer.pipelines import sweeps
from designer.pipelines.models import NodeRun, Sweep, Trial, Worker
from tests.conftest import TEST_DATA
from tests.pipes import link, node, pipeline
from tests.workers import CeleryWorker

pytestmark = [pytest.mark.timeout(600)]

GOOD, BETTER, POOR = 0.005, 0.01, 0.00001  # a rate 1000x too small scores 1000x lower (tests/toy_modules.py ToyTuning)


@pytest.fixture(scope="module")
def two_workers(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock():
        workers = [CeleryWorker(name, concurrency=1, log_dir=TEST_DATA) for name in ("sweep-a", "sweep-b")]
        for w in workers:
            w.wait_ready()
    yield workers
    for w in workers:
        w.stop()


@pytest.fixture
def workers(two_workers, transactional_db):
    deadline = time.monotonic() + 10
    while Worker.objects.filter(hostname__in=[w.hostname for w in two_workers], stopped_at__isnull=True).count() < 2:
        assert time.monotonic() < deadline, "the workers did not register"
        time.sleep(0.1)
    return two_workers


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
    deadline = time.monotonic() + timeout
    while True:
        sweep.refresh_from_db()
        if sweep.finished:
            return sweep
        assert time.monotonic() < deadline, f"sweep not finished: {sweep.status} {list(sweep.trials.values('number', 'status'))}"
        sweeps.tick_one(sweep)  # what the workers' heartbeat does too
        time.sleep(0.2)


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


def test_random_sampling_runs_two_trials_at_a_time_on_two_workers_and_never_more(workers, users):
    space = [{"name": "lr", "expression": "uniform", "values": [0.001, 0.01]}]
    sweep = finished(sweeps.start(users["owner"], tuning_pipeline(epochs=4, epoch_seconds=0.5, source_value=2),
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
    assert "max_duration_minutes (60) reached" in sweep.message
    assert set(sweep.trials.values_list("status", flat=True)) == {st.CANCELLED}


def test_a_trial_whose_sampled_value_no_module_accepts_fails_named(db, users):
    doc = tuning_pipeline()
    doc["parameters"][0]["min"] = None  # normal() may go below 0, which Learning rate refuses
    space = [{"name": "lr", "expression": "normal", "values": [-1.0, 0.001]}]
    sweep = finished(sweeps.start(users["owner"], doc, config(space, sampling="random", total=2, concurrent=1)), timeout=30)
    assert sweep.status == st.FAILED
    errors = list(sweep.trials.values_list("error", flat=True))
    assert len(errors) == 2 and all("Learning rate" in e for e in errors), errors
    assert not Trial.objects.filter(sweep=sweep, run__isnull=False).exists()
