"""Sweeps on Optuna: HyperDrive's samplers, expressions and early-termination policies, on an
in-memory study and on one in a SQLite file shared by two study objects (as two workers would)."""
import math
from itertools import count

import optuna
import pytest
from optuna.trial import TrialState

from designer.engine import tuning
from designer.engine.sweep_config import check

PARAMETERS = [
    {"name": "learning_rate", "type": "float", "default": 0.01, "min": 1e-6, "max": 1.0},
    {"name": "batch_size", "type": "int", "default": 32, "min": 1, "max": 512},
    {"name": "epochs", "type": "int", "default": 3, "min": 0, "max": 100},
    {"name": "momentum", "type": "float", "default": 0.9, "min": 0.0, "max": 1.0},
    {"name": "weight_decay", "type": "float", "default": 0.0},
    {"name": "dropout", "type": "float", "default": 0.1, "min": 0.0, "max": 0.5},
    {"name": "warmup", "type": "int", "default": 0, "min": 0, "max": 50},
    {"name": "pretrained", "type": "bool", "default": False},
    {"name": "model", "type": "string", "default": "resnet18"},
]
TYPES = {p["name"]: p["type"] for p in PARAMETERS}
RANGES = {p["name"]: (p.get("min"), p.get("max")) for p in PARAMETERS}
EVERY_EXPRESSION = [
    {"name": "learning_rate", "expression": "loguniform", "values": [-9, -2]},
    {"name": "batch_size", "expression": "quniform", "values": [16, 128, 16]},
    {"name": "epochs", "expression": "randint", "values": [10]},
    {"name": "momentum", "expression": "uniform", "values": [0.5, 0.99]},
    {"name": "weight_decay", "expression": "qloguniform", "values": [-12, -4, 0.0001]},
    {"name": "dropout", "expression": "normal", "values": [0.2, 0.2]},
    {"name": "warmup", "expression": "qlognormal", "values": [1, 1, 1]},
    {"name": "pretrained", "expression": "choice", "values": [True, False]},
    {"name": "model", "expression": "choice", "values": ["resnet18", "resnet50"]},
]
names = (f"sweep-{n}" for n in count())


def config(sampling="random", space=None, policy=None, goal="maximize", seed=1, **more):
    raw = {"sampling": sampling, "parameter_space": space or EVERY_EXPRESSION, "policy": policy,
           "primary_metric_name": "accuracy", "primary_metric_goal": goal, "max_total_runs": 50, "seed": seed} | more
    return check({k: v for k, v in raw.items() if v is not None}, PARAMETERS, {"accuracy"})


@pytest.fixture(params=["memory", "sqlite"])
def storage(request, tmp_path):
    if request.param == "memory":
        return optuna.storages.InMemoryStorage()
    return tuning.storage(f"sqlite:///{tmp_path / 'optuna.sqlite3'}")


def started(storage, cfg, n):
    """A study and n trials asked together (none told yet), as max_concurrent_runs starts them."""
    study = tuning.create_study(storage, next(names), cfg)
    return study, [tuning.ask(study, cfg, TYPES, RANGES) for _ in range(n)]


def curve(study, cfg, trial, values, start=1):
    """Report values from step `start`; the verdict at each step."""
    return [tuning.report(study, cfg, trial.trial_id, step, v) for step, v in enumerate(values, start)]


# -- sampling --------------------------------------------------------------------------------------------

def test_a_2x2_grid_gives_4_distinct_points_asked_together_then_is_exhausted(storage):
    cfg = config("grid", [{"name": "learning_rate", "expression": "choice", "values": [0.1, 0.01]},
                          {"name": "batch_size", "expression": "choice", "values": [16, 32]}])
    study = tuning.create_study(storage, next(names), cfg)
    other = tuning.load_study(storage, study.study_name, cfg)  # another worker's view of the same study
    asked = [tuning.ask(s, cfg, TYPES) for s in (study, other, study, other)]
    points = {(a.values["learning_rate"], a.values["batch_size"]) for a in asked}
    assert points == {(0.1, 16), (0.1, 32), (0.01, 16), (0.01, 32)}
    assert [a.number for a in asked] == [0, 1, 2, 3]
    assert tuning.exhausted(study, cfg) and tuning.exhausted(other, cfg)
    with pytest.raises(ValueError, match="the grid's 4 points have all been asked"):
        tuning.ask(study, cfg, TYPES)
    for a in asked:  # the last tell does not try to stop an optimize loop that is not there
        tuning.tell(study, a.number, "completed", a.values["learning_rate"])
    assert study.best_trial.user_attrs["values"]["learning_rate"] == 0.1


def test_a_sweep_asks_no_more_than_max_total_runs_even_when_two_workers_race(storage, monkeypatch):
    cfg = config(max_total_runs=2)
    study, asked = started(storage, cfg, 2)
    assert tuning.exhausted(study, cfg)
    with pytest.raises(ValueError, match=r"max_total_runs \(2\) trials have been asked"):
        tuning.ask(study, cfg, TYPES, RANGES)
    monkeypatch.setattr(tuning, "exhausted", lambda study, config: False)  # another worker looked just before
    with pytest.raises(ValueError, match="max_total_runs"):
        tuning.ask(study, cfg, TYPES, RANGES)
    surplus = study.trials[2]
    assert surplus.state == TrialState.FAIL and surplus.user_attrs == {"status": "surplus"}


@pytest.mark.parametrize("sampling", ["random", "bayesian"])
def test_sampled_values_are_typed_and_within_their_expressions_bounds(storage, sampling):
    cfg = config(sampling)
    study = tuning.create_study(storage, next(names), cfg)
    seen = []
    for _ in range(14):  # past TPE's 10 random start-up trials
        a = tuning.ask(study, cfg, TYPES, RANGES)
        v = a.values
        assert study.trials[a.number].user_attrs["values"] == v
        assert isinstance(v["learning_rate"], float) and math.exp(-9) <= v["learning_rate"] <= math.exp(-2)
        assert type(v["batch_size"]) is int and v["batch_size"] % 16 == 0 and 16 <= v["batch_size"] <= 128
        assert type(v["epochs"]) is int and 0 <= v["epochs"] <= 9  # randint 0..upper-1
        assert isinstance(v["momentum"], float) and 0.5 <= v["momentum"] <= 0.99
        assert v["weight_decay"] == round(v["weight_decay"], 4) and 0 <= v["weight_decay"] <= 0.0185
        assert 0.0 <= v["dropout"] <= 0.5  # a normal draw clipped to the declared range
        assert type(v["warmup"]) is int and 0 <= v["warmup"] <= 50
        assert type(v["pretrained"]) is bool and v["model"] in ("resnet18", "resnet50")
        seen.append(v)
        tuning.tell(study, a.number, "completed", v["momentum"])
    assert len({v["learning_rate"] for v in seen}) == len(seen)


def test_without_a_range_an_int_parameter_is_still_an_int():
    cfg = config(space=[{"name": "epochs", "expression": "qnormal", "values": [10, 3, 1]}])
    study = tuning.create_study(optuna.storages.InMemoryStorage(), "s", cfg)
    assert all(type(tuning.ask(study, cfg, {"epochs": "int"}).values["epochs"]) is int for _ in range(5))


def test_a_seed_gives_the_same_trials_in_any_worker_and_two_workers_never_draw_the_same(tmp_path):
    cfg = config("random")
    shared = tuning.storage(f"sqlite:///{tmp_path / 'optuna.sqlite3'}")
    study = tuning.create_study(shared, "shared", cfg)
    other = tuning.load_study(shared, "shared", cfg)
    asked = [tuning.ask(s, cfg, TYPES, RANGES).values for s in (study, other, study, other)]
    assert len({a["learning_rate"] for a in asked}) == 4
    again = tuning.create_study(optuna.storages.InMemoryStorage(), "again", cfg)
    assert [tuning.ask(again, cfg, TYPES, RANGES).values for _ in range(4)] == asked


def test_storage_is_made_once_per_url_until_closed(tmp_path):
    url = f"sqlite:///{tmp_path / 'optuna.sqlite3'}"
    first = tuning.storage(url)
    assert tuning.storage(url) is first and tuning.storage(f"sqlite:///{tmp_path / 'other.sqlite3'}") is not first
    tuning.create_study(first, "kept", config())
    tuning.close_storages()
    assert tuning.storage(url) is not first and tuning.load_study(tuning.storage(url), "kept", config()).trials == []


# -- reporting and telling ----------------------------------------------------------------------------------

def test_a_step_reported_twice_keeps_its_last_value(storage):
    """Issue 29: a script that logs a step's figure inside its validation loop and again after it."""
    cfg = config()
    study, (a,) = started(storage, cfg, 1)
    assert curve(study, cfg, a, [0.5]) == [False]
    assert tuning.report(study, cfg, a.trial_id, 1, 0.1) is False
    assert study.trials[0].intermediate_values == {1: 0.1}


def test_tell_maps_each_trial_state_and_a_second_tell_changes_nothing(storage):
    cfg = config()
    study, asked = started(storage, cfg, 5)
    curve(study, cfg, asked[1], [0.4, 0.3])
    for a, state in zip(asked, ["completed", "early_terminated", "failed", "cancelled", "completed"]):
        tuning.tell(study, a.number, state, 0.7 if a.number == 0 else None)
    trials = study.trials
    assert [t.state for t in trials] == [TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL, TrialState.FAIL, TrialState.FAIL]
    assert trials[0].value == 0.7 and [t.user_attrs["status"] for t in trials][2:4] == ["failed", "cancelled"]
    tuning.tell(study, 0, "failed", None)
    assert study.trials[0].state == TrialState.COMPLETE
    assert tuning.report(study, cfg, asked[1].trial_id, 3, 0.9) is True  # already early terminated: still stop
    assert tuning.report(study, cfg, asked[0].trial_id, 3, 0.9) is False
    with pytest.raises(ValueError, match="unknown trial state 'done'"):
        tuning.tell(study, 4, "done", 1.0)


def test_best_value_is_the_best_reported_metric():
    assert tuning.best_value([0.2, 0.9, float("nan"), 0.5], "maximize") == 0.9
    assert tuning.best_value([0.2, 0.9, 0.5], "minimize") == 0.2
    assert tuning.best_value([], "maximize") is None and tuning.best_value([float("nan")], "minimize") is None


# -- early termination -----------------------------------------------------------------------------------------

GOOD, FAIR, POOR = [0.5, 0.7, 0.8, 0.85], [0.48, 0.68, 0.78, 0.83], [0.1, 0.12, 0.15, 0.2]


def race(storage, policy, curves, goal="maximize"):
    """Trials started together, reporting epoch by epoch in turn; the epoch each was stopped at (or None)."""
    cfg = config(policy=policy, goal=goal)
    study, asked = started(storage, cfg, len(curves))
    stopped = [None] * len(curves)
    for step in range(1, len(curves[0]) + 1):
        for i, (a, values) in enumerate(zip(asked, curves)):
            if stopped[i] is None and tuning.report(study, cfg, a.trial_id, step, values[step - 1]):
                stopped[i] = step
                tuning.tell(study, a.number, "early_terminated", None)
    return stopped


def test_bandit_stops_a_trial_outside_the_slack_of_the_best(storage):
    assert race(storage, {"type": "BanditPolicy", "slack_factor": 0.1}, [GOOD, FAIR, POOR]) == [None, None, 1]
    assert race(storage, {"type": "BanditPolicy", "slack_amount": 0.2, "delay_evaluation": 2}, [GOOD, POOR]) == [None, 2]
    losses = [[1.0, 0.6, 0.4], [1.1, 0.85, 0.7]]
    assert race(storage, {"type": "BanditPolicy", "slack_factor": 0.2}, losses, goal="minimize") == [None, 2]  # 0.85 > 0.6 * 1.2
    assert race(storage, {"type": "BanditPolicy", "slack_amount": 0.28}, losses, goal="minimize") == [None, 3]  # 0.7 > 0.4 + 0.28


def test_bandit_judges_a_trial_by_its_best_so_far_so_one_noisy_epoch_does_not_end_it(storage):
    # epoch 3: the second trial dips to 0.70, under 0.82 / 1.1, but its best so far (0.85) leads: it goes on
    steady, noisy = [0.5, 0.82, 0.82, 0.82], [0.6, 0.85, 0.70, 0.86]
    assert race(storage, {"type": "BanditPolicy", "slack_factor": 0.1}, [steady, noisy]) == [None, None]
    assert race(storage, {"type": "BanditPolicy", "slack_factor": 0.1}, [steady, [0.6, 0.7, 0.72, 0.9]]) == [None, 2]


def test_median_stopping_stops_a_trial_whose_best_is_below_the_median_of_the_others_averages(storage):
    # at epoch 1 FAIR's 0.48 is above the median (0.3) of GOOD's 0.5 and POOR's 0.1; POOR's 0.1 was below GOOD's 0.5
    assert race(storage, {"type": "MedianStoppingPolicy"}, [GOOD, POOR, FAIR]) == [None, 1, None]
    assert race(storage, {"type": "MedianStoppingPolicy", "evaluation_interval": 2}, [GOOD, POOR]) == [None, 2]


def test_truncation_selection_stops_the_worst_percentage(storage):
    assert race(storage, {"type": "TruncationSelectionPolicy", "truncation_percentage": 50}, [GOOD, POOR]) == [None, 1]
    # minimize: GOOD's curve is the worst; at epoch 3 (the only evaluation) it is below the 20th percentile
    policy = {"type": "TruncationSelectionPolicy", "truncation_percentage": 20, "delay_evaluation": 3, "evaluation_interval": 3}
    assert race(storage, policy, [POOR, GOOD, FAIR], goal="minimize") == [None, 3, None]


def test_no_termination_policy_never_stops(storage):
    assert race(storage, {"type": "NoTerminationPolicy"}, [GOOD, POOR]) == [None, None]


@pytest.mark.parametrize("policy", [{"type": "BanditPolicy", "slack_factor": 0.1}, {"type": "MedianStoppingPolicy"},
                                    {"type": "TruncationSelectionPolicy", "truncation_percentage": 50}])
def test_a_trial_with_nothing_to_compare_with_goes_on_and_a_diverged_one_stops(storage, policy):
    assert race(storage, policy, [POOR]) == [None]
    assert race(storage, policy, [GOOD, [0.6, float("nan"), 0.9, 0.9]]) == [None, 2]


def test_a_completed_trial_is_compared_with_too(storage):
    cfg = config(policy={"type": "BanditPolicy", "slack_factor": 0.1})
    study, (good, poor) = started(storage, cfg, 2)
    assert curve(study, cfg, good, GOOD) == [False] * 4
    tuning.tell(study, good.number, "completed", max(GOOD))
    assert curve(study, cfg, poor, POOR[:1]) == [True]


def test_a_grid_of_a_million_points_is_sampled_one_point_at_a_time(storage):
    import itertools
    import time
    import tracemalloc

    lrs, sizes, models = [(i + 1) / 1e4 for i in range(100)], list(range(1, 101)), [f"m{i}" for i in range(100)]
    cfg = config("grid", [{"name": "learning_rate", "expression": "choice", "values": lrs},
                          {"name": "batch_size", "expression": "choice", "values": sizes},
                          {"name": "model", "expression": "choice", "values": models}], max_total_runs=5)
    tracemalloc.start()
    started = time.process_time()  # CPU seconds of this process: other jobs on the machine do not count
    study = tuning.create_study(storage, next(names), cfg)
    asked = [tuning.ask(study, cfg, TYPES) for _ in range(5)]
    seconds, (_, peak) = time.process_time() - started, tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert seconds < 5.0 and peak < 20 * 2**20, (seconds, peak)  # the listed grid: 1,000,000 tuples, ~100 MB
    by_name = itertools.product(sizes, lrs, models)  # parameters by name, the last varying fastest
    assert [(a.values["batch_size"], a.values["learning_rate"], a.values["model"]) for a in asked] == \
        [next(by_name) for _ in range(5)]
    assert tuning.exhausted(study, cfg)
