"""A sweep's configuration: HyperDrive's shape read from YAML or JSON, every problem named."""
import json

import pytest

from designer.engine.sweep_config import (
    Expression,
    Policy,
    SweepConfig,
    SweepConfigInvalid,
    check,
    grid_size,
)
from designer.engine.sweep_text import parse_text
from sdk.context import STOP_GRACE_SECONDS

PARAMETERS = [
    {"name": "learning_rate", "type": "float", "default": 0.001, "min": 1e-06, "max": 1.0},
    {"name": "batch_size", "type": "int", "default": 32, "min": 1, "max": 512},
    {"name": "epochs", "type": "int", "default": 3},
    {"name": "momentum", "type": "float", "default": 0.9},
    {"name": "pretrained", "type": "bool", "default": False},
    {"name": "model", "type": "string", "default": "resnet18"},
]
METRICS = {"validation_top1_accuracy", "training_loss"}

YAML = """
sampling: random
parameter_space:
  - {name: learning_rate, expression: loguniform, values: [-9, -2]}
  - {name: batch_size, expression: choice, values: [16, 32]}
policy: {type: BanditPolicy, evaluation_interval: 1, slack_factor: 0.1, delay_evaluation: 0}
primary_metric_name: validation_top1_accuracy
primary_metric_goal: maximize
max_total_runs: 8
max_concurrent_runs: 2
max_duration_minutes: 60
seed: 1
"""


def base(**changes) -> dict:
    raw = parse_text(YAML) | changes
    return {k: v for k, v in raw.items() if v is not None}


def problems(raw, parameters=PARAMETERS, metrics=METRICS) -> list[str]:
    with pytest.raises(SweepConfigInvalid) as e:
        check(raw, parameters, metrics)
    return [str(p) for p in e.value.problems]


def space(*entries) -> dict:
    return base(parameter_space=[{"name": n, "expression": x, "values": v} for n, x, v in entries])


def test_a_hyperdrive_configuration_reads_as_it_is_written():
    config = check(parse_text(YAML), PARAMETERS, METRICS)
    assert config == SweepConfig(
        sampling="random",
        parameter_space=(Expression("learning_rate", "loguniform", (-9, -2)), Expression("batch_size", "choice", (16, 32))),
        policy=Policy("BanditPolicy", evaluation_interval=1, delay_evaluation=0, slack_factor=0.1),
        primary_metric_name="validation_top1_accuracy", primary_metric_goal="maximize",
        max_total_runs=8, max_concurrent_runs=2, max_duration_minutes=60, seed=1)


def test_the_canonical_form_round_trips_through_json():
    config = check(parse_text(YAML), PARAMETERS, METRICS)
    stored = json.loads(json.dumps(config.as_dict()))
    assert stored == parse_text(YAML)  # the same shape as the YAML
    assert SweepConfig.from_dict(stored) == config
    minimal = check(base(policy=None, max_concurrent_runs=None, max_duration_minutes=None, seed=None), PARAMETERS, METRICS)
    assert minimal.policy == Policy("NoTerminationPolicy") and minimal.max_concurrent_runs == 1
    assert minimal.as_dict()["policy"] == {"type": "NoTerminationPolicy"} and "seed" not in minimal.as_dict()
    assert SweepConfig.from_dict(minimal.as_dict()) == minimal


def test_json_is_read_too_and_hyperdrive_capitals_are_accepted():
    config = check(parse_text(json.dumps(base(primary_metric_goal="MAXIMIZE", sampling="Random"))), PARAMETERS, METRICS)
    assert (config.primary_metric_goal, config.sampling) == ("maximize", "random")
    assert check(base(policy={"type": "median_stopping"}), PARAMETERS, METRICS).policy.type == "MedianStoppingPolicy"
    assert check(base(policy="NoTerminationPolicy"), PARAMETERS, METRICS).policy == Policy("NoTerminationPolicy")
    # SDK v1's class names, and expressions written as the SDK's functions (Choice, LogUniform)
    for name, sampling in [("RandomParameterSampling", "random"), ("GridParameterSampling", "grid"),
                           ("BayesianParameterSampling", "bayesian")]:
        config = check(space(("batch_size", "Choice", [16, 32])) | {"sampling": name}, PARAMETERS, METRICS)
        assert config.sampling == sampling and config.parameter_space == (Expression("batch_size", "choice", (16, 32)),)
    assert check(space(("learning_rate", "LogUniform", [-9, -2])), PARAMETERS, METRICS).parameter_space[0].expression == "loguniform"


def test_exponents_without_a_dot_are_numbers_in_yaml():
    assert parse_text("values: [1e-3, 2.5E+2, -1e2]") == {"values": [0.001, 250.0, -100.0]}


def test_a_syntax_error_names_its_line_and_column():
    with pytest.raises(SweepConfigInvalid) as e:
        parse_text("sampling: random\nparameter_space: [\n  {name: a\n")
    assert str(e.value).startswith("line 4, column 1: ") and "not valid YAML or JSON" in str(e.value)
    with pytest.raises(SweepConfigInvalid, match="not valid YAML or JSON"):
        parse_text(b"\xff\xfe\xffsampling")


def test_the_configuration_must_be_a_mapping():
    assert problems(parse_text("- sampling")) == [
        "configuration: must be a mapping of keys (sampling, parameter_space, ...), not a list"]


def test_an_unknown_key_suggests_the_right_one_and_a_missing_key_is_named():
    raw = base(max_total_run=8)
    del raw["max_total_runs"]
    assert problems(raw) == [
        "max_total_run: unknown key (did you mean max_total_runs?)",
        "max_total_runs: missing (a sweep needs sampling, parameter_space, primary_metric_name, primary_metric_goal, max_total_runs)",
    ]
    assert problems(base(colour="red"))[0].startswith("colour: unknown key (a sweep takes sampling, parameter_space, policy")


def test_unknown_sampling_is_named():
    assert problems(base(sampling="sobol")) == ["sampling: unknown sampling 'sobol' (one of random, grid, bayesian)"]


def test_an_empty_or_malformed_parameter_space_is_named():
    assert problems(base(parameter_space=[])) == ["parameter_space: must list at least one {name, expression, values}"]
    assert problems(base(parameter_space="lr")) == ["parameter_space: must list at least one {name, expression, values}, not a string"]
    assert problems(base(parameter_space=["lr", {"name": "batch_size", "values": [1], "range": 2}])) == [
        "parameter_space[0]: must be a mapping {name, expression, values}, not a string",
        "parameter_space[1] (batch_size): missing expression, unknown key range (each entry has name, expression and values)",
    ]


def test_an_unknown_expression_lists_the_known_ones():
    assert problems(space(("learning_rate", "lognormalish", [0, 1]))) == [
        "parameter_space[0] (learning_rate): unknown expression 'lognormalish' (one of choice, randint, uniform, quniform, "
        "loguniform, qloguniform, normal, qnormal, lognormal, qlognormal)"]


def test_a_wrong_number_of_values_says_what_they_are():
    assert problems(space(("learning_rate", "uniform", [0.1]), ("momentum", "qnormal", [0, 1]), ("batch_size", "randint", [1, 2]))) == [
        "parameter_space[0] (learning_rate): uniform takes [low, high], got 1 value",
        "parameter_space[1] (momentum): qnormal takes [mu, sigma, q], got 2 values",
        "parameter_space[2] (batch_size): randint takes [upper], got 2 values",
    ]
    assert problems(space(("learning_rate", "uniform", 0.1))) == [
        "parameter_space[0] (learning_rate): values must be a list (uniform takes [low, high]), not 0.1"]


def test_values_that_are_not_numbers_are_named_and_booleans_are_not_numbers():
    assert problems(space(("learning_rate", "uniform", ["a", True]), ("momentum", "choice", [[1]]))) == [
        "parameter_space[0] (learning_rate): low and high must be numbers (uniform takes [low, high]), got 'a'",
        "parameter_space[1] (momentum): choice values must be numbers, strings or booleans, not a list",
    ]


def test_an_empty_choice_is_named():
    assert problems(space(("batch_size", "choice", []))) == [
        "parameter_space[0] (batch_size): empty choice (choice takes [value, value, ...]: at least one)"]


def test_low_above_high_is_named_and_equal_bounds_for_a_continuous_expression():
    assert problems(space(("momentum", "uniform", [0.9, 0.1]), ("learning_rate", "loguniform", [-3, -3]),
                          ("batch_size", "quniform", [64, 16, 16]))) == [
        "parameter_space[0] (momentum): low (0.9) must be below high (0.1) (uniform takes [low, high])",
        "parameter_space[1] (learning_rate): min_value (-3) must be below max_value (-3) (loguniform takes [min_value, max_value])",
        "parameter_space[2] (batch_size): low (64) must be below high (16) (quniform takes [low, high, q])",
    ]
    check(space(("batch_size", "quniform", [16, 16, 16])), PARAMETERS, METRICS)  # one point: allowed


def test_q_sigma_and_randint_upper_must_be_positive():
    assert problems(space(("momentum", "quniform", [0, 1, 0]), ("learning_rate", "normal", [0.01, -1]),
                          ("batch_size", "randint", [0]))) == [
        "parameter_space[0] (momentum): q must be above 0, got 0 (quniform takes [low, high, q])",
        "parameter_space[1] (learning_rate): sigma must be above 0, got -1 (normal takes [mu, sigma])",
        "parameter_space[2] (batch_size): upper must be a whole number of at least 1 (randint takes [upper]: 0 to upper-1), got 0",
    ]


def test_the_log_forms_bounds_are_exponents_that_must_fit_a_float():
    assert problems(space(("momentum", "loguniform", [0, 800]))) == [
        "parameter_space[0] (momentum): the bounds are exponents: exp(800) is out of a float's range (loguniform takes [min_value, max_value])"]


def test_an_unknown_pipeline_parameter_lists_the_declared_ones_and_a_parameter_twice_is_named():
    assert problems(space(("lr", "uniform", [0, 1]), ("batch_size", "choice", [8]), ("batch_size", "choice", [16]))) == [
        "parameter_space[0] (lr): unknown pipeline parameter 'lr' (declared: learning_rate, batch_size, epochs, momentum, pretrained, model)",
        "parameter_space[2] (batch_size): batch_size is swept twice (also parameter_space[1])",
    ]
    assert problems(space(("lr", "uniform", [0, 1])), parameters=[]) == [
        "parameter_space[0] (lr): unknown pipeline parameter 'lr' (this pipeline declares no parameters)"]


def test_each_problem_names_its_pipeline_parameter_and_field():
    with pytest.raises(SweepConfigInvalid) as e:
        check(space(("momentum", "uniform", [1, 0])), PARAMETERS, METRICS)
    (problem,) = e.value.problems
    assert problem.param == "momentum" and problem.field == "parameter_space[0]" and problem.code == "low_above_high"
    assert problem.as_dict()["text"] == str(problem) == problem.message


def test_an_int_parameter_refuses_continuous_expressions_and_fractional_q():
    assert problems(space(("batch_size", "uniform", [8, 64]), ("epochs", "qloguniform", [0, 3, 0.5]))) == [
        "parameter_space[0] (batch_size): batch_size is an int parameter: uniform draws fractional values "
        "(use choice, randint or quniform with a whole q)",
        "parameter_space[1] (epochs): epochs is an int parameter: q must be a whole number, got 0.5",
    ]
    check(space(("epochs", "qlognormal", [1, 0.5, 1]), ("batch_size", "choice", [16, 32.0])), PARAMETERS, METRICS)


def test_bool_and_string_parameters_take_a_choice_of_their_type():
    assert problems(space(("pretrained", "randint", [2]), ("model", "choice", ["resnet18", True]),
                          ("batch_size", "choice", [16, 24.5]), ("momentum", "choice", [0.9, False]))) == [
        "parameter_space[0] (pretrained): pretrained is a bool parameter: only choice fits it (got randint)",
        "parameter_space[1] (model): model is a string parameter: choice value true is not a string (quote it in YAML)",
        "parameter_space[2] (batch_size): batch_size is an int parameter: choice value 24.5 is not an int",
        "parameter_space[3] (momentum): momentum is a float parameter: choice value false is not a float",
    ]


def test_bounded_expressions_stay_inside_the_declared_range():
    assert problems(space(("batch_size", "choice", [16, 1024]), ("learning_rate", "loguniform", [-20, -2]),
                          ("momentum", "uniform", [0, 5]))) == [
        "parameter_space[0] (batch_size): 1024 is above max 512 of batch_size (declared range 1..512)",
        "parameter_space[1] (learning_rate): exp(-20) = 2.061e-09 is below min 1e-06 of learning_rate (declared range 1e-06..1)",
    ]  # momentum declares no range
    assert problems(space(("batch_size", "randint", [600]), ("learning_rate", "quniform", [0, 0.5, 0.1]))) == [
        "parameter_space[0] (batch_size): randint draw 0 is below min 1 of batch_size (declared range 1..512)",
        "parameter_space[1] (learning_rate): low 0 is below min 1e-06 of learning_rate (declared range 1e-06..1)",
    ]


def test_grid_sampling_takes_choice_only():
    assert problems(space(("momentum", "uniform", [0, 1]), ("batch_size", "choice", [16, 32])) | {"sampling": "grid"}) == [
        "parameter_space[0] (momentum): grid sampling takes choice only, as HyperDrive's GridParameterSampling does (not uniform)"]


def test_grid_size_is_the_product_of_the_choices():
    grid = check(space(("momentum", "choice", [0.8, 0.9, 0.99]), ("batch_size", "choice", [16, 32])) | {"sampling": "grid"},
                 PARAMETERS, METRICS)
    assert grid_size(grid) == 6
    assert grid_size(check(base(), PARAMETERS, METRICS)) is None


def test_an_unknown_metric_lists_the_known_ones_and_the_goal_is_maximize_or_minimize():
    assert problems(base(primary_metric_name="accuracy", primary_metric_goal="up")) == [
        "primary_metric_name: unknown metric 'accuracy' (the pipeline's modules emit training_loss, validation_top1_accuracy)",
        "primary_metric_goal: must be maximize or minimize, got 'up'",
    ]
    assert problems(base(primary_metric_name="accuracy"), metrics=set()) == [
        "primary_metric_name: unknown metric 'accuracy' (the pipeline's modules emit no metric)"]


def test_the_limits_are_named_when_out_of_range():
    assert problems(base(max_total_runs=0, max_concurrent_runs=0, max_duration_minutes=0, seed=-1)) == [
        "max_total_runs is 0: must be at least 1 and at most 1000",
        "max_concurrent_runs is 0: at least one trial must run at a time",
        "max_duration_minutes: must be a number of minutes above 0 and at most 525,600 (a year), got 0",
        "seed is -1: must be at least 0 and at most 4294967295",
    ]
    assert problems(base(max_total_runs=2.5, max_concurrent_runs=True)) == [
        "max_total_runs: must be a whole number, got 2.5",
        "max_concurrent_runs: must be a whole number, got true",
    ]


def test_an_unknown_policy_lists_the_known_ones():
    assert problems(base(policy={"type": "HyperbandPolicy"})) == [
        "policy.type: unknown policy 'HyperbandPolicy' (one of BanditPolicy, MedianStoppingPolicy, TruncationSelectionPolicy, "
        "NoTerminationPolicy)"]
    assert problems(base(policy={"slack_factor": 0.1})) == [
        "policy.type: missing (one of BanditPolicy, MedianStoppingPolicy, TruncationSelectionPolicy, NoTerminationPolicy)"]
    assert problems(base(policy=[1])) == ["policy: must be a mapping such as {type: BanditPolicy, slack_factor: 0.1}, not a list"]


def test_bandit_needs_exactly_one_positive_slack():
    assert problems(base(policy={"type": "BanditPolicy"})) == [
        "policy: BanditPolicy needs slack_factor or slack_amount (how far behind the best trial a trial may fall)"]
    assert problems(base(policy={"type": "BanditPolicy", "slack_factor": 0.1, "slack_amount": 0.2})) == [
        "policy: BanditPolicy takes slack_factor or slack_amount, not both"]
    assert problems(base(policy={"type": "BanditPolicy", "slack_amount": 0})) == ["policy.slack_amount: must be a number above 0, got 0"]


def test_policy_fields_unknown_or_out_of_range_are_named():
    assert problems(base(policy={"type": "MedianStoppingPolicy", "evaluation_intervall": 2, "slack_factor": 0.1,
                                 "evaluation_interval": 0, "delay_evaluation": -1})) == [
        "policy.evaluation_intervall: unknown key (did you mean evaluation_interval?)",
        "policy.slack_factor: unknown key (MedianStoppingPolicy takes evaluation_interval, delay_evaluation, stop_grace_seconds)",
        "policy.evaluation_interval is 0: must be at least 1",
        "policy.delay_evaluation is -1: must be at least 0",
    ]
    assert problems(base(policy={"type": "NoTerminationPolicy", "evaluation_interval": 1})) == [
        "policy.evaluation_interval: unknown key (NoTerminationPolicy takes no other key)"]


def test_the_grace_before_a_stopped_trial_is_ended_is_the_users_in_seconds():
    policy = check(base(policy={"type": "BanditPolicy", "slack_factor": 0.1, "stop_grace_seconds": 2.5}), PARAMETERS, METRICS).policy
    assert policy.stop_grace_seconds == 2.5 and policy.grace == 2.5
    assert policy.as_dict() == {"type": "BanditPolicy", "evaluation_interval": 1, "delay_evaluation": 0, "slack_factor": 0.1,
                                "stop_grace_seconds": 2.5}
    assert check(base(), PARAMETERS, METRICS).policy.grace == STOP_GRACE_SECONDS == 60  # not given: a minute
    assert check(base(policy={"type": "MedianStoppingPolicy", "stop_grace_seconds": 0}), PARAMETERS, METRICS).policy.grace == 0
    for bad, got in ((-1, "-1"), (86_401, "86401"), ("soon", "'soon'"), (True, "true")):
        assert problems(base(policy={"type": "BanditPolicy", "slack_factor": 0.1, "stop_grace_seconds": bad})) == [
            f"policy.stop_grace_seconds: must be a number of seconds from 0 to 86,400 (a day), got {got}"]
    assert problems(base(policy={"type": "NoTerminationPolicy", "stop_grace_seconds": 5})) == [
        "policy.stop_grace_seconds: unknown key (NoTerminationPolicy takes no other key)"]


def test_truncation_needs_a_percentage_from_1_to_99():
    assert problems(base(policy={"type": "TruncationSelectionPolicy"})) == [
        "policy.truncation_percentage: TruncationSelectionPolicy needs a percentage from 1 to 99, missing"]
    assert problems(base(policy={"type": "TruncationSelectionPolicy", "truncation_percentage": 100})) == [
        "policy.truncation_percentage: TruncationSelectionPolicy needs a percentage from 1 to 99, got 100"]
    policy = check(base(policy={"type": "TruncationSelectionPolicy", "truncation_percentage": 20, "evaluation_interval": 2}),
                   PARAMETERS, METRICS).policy
    assert policy == Policy("TruncationSelectionPolicy", evaluation_interval=2, truncation_percentage=20)


def test_every_problem_is_reported_at_once():
    raw = base(sampling="grid", max_concurrent_runs=0, primary_metric_name="nope", policy={"type": "BanditPolicy"})
    raw["parameter_space"].append({"name": "ghost", "expression": "choice", "values": []})
    found = problems(raw)
    assert len(found) == 6, found  # loguniform under grid, the empty choice, the unknown parameter, policy, metric, limit


# -- issue 31: bounded work whatever the configuration holds ------------------------------------------------

def alias_bomb(levels: int, key: str = "sampling") -> str:
    """`levels` levels of ten aliases: 10^levels values in a few hundred bytes ("billion laughs")."""
    lines = ["l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 10) + "]" for i in range(1, levels)]
    return "\n".join(lines) + f"\n{key}: *l{levels - 1}\n"


def bounded(call):
    """call()'s answer, the seconds it took and the peak of memory it allocated (tracemalloc)."""
    import time
    import tracemalloc

    tracemalloc.start()
    started = time.process_time()  # CPU seconds of this process: other jobs on the machine do not count
    try:
        answer = call()
    finally:
        seconds, (_, peak) = time.process_time() - started, tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return answer, seconds, peak


def test_an_alias_bomb_is_refused_before_it_is_built_naming_its_field():
    text = YAML.replace("sampling: random\n", "") + alias_bomb(10)  # 10^10 values in 0.6 KB
    found, seconds, peak = bounded(lambda: _refusal(text))
    assert seconds < 1.0 and peak < 10 * 2**20, (seconds, peak)
    assert len(found) == 1 and found[0].field == "sampling", found
    assert "stands for more than 100,000 values once its aliases (*name) are expanded" in found[0].message
    assert len(found[0].message) < 300


def _refusal(text):
    with pytest.raises(SweepConfigInvalid) as e:
        parse_text(text)
    return e.value.problems


def test_a_value_quoted_in_a_problem_is_bounded_however_much_it_holds():
    bomb = ["lol"] * 10
    for _ in range(9):  # the same list ten times, nine levels deep: 10^10 values, as a YAML alias builds it
        bomb = [bomb] * 10
    raw = base(sampling=bomb, primary_metric_goal=bomb, policy={"type": bomb},
               parameter_space=[{"name": "momentum", "expression": bomb, "values": [0.1]}])
    found, seconds, peak = bounded(lambda: problems(raw))
    assert seconds < 1.0 and peak < 10 * 2**20, (seconds, peak)
    assert len(found) == 4 and all(len(p) < 300 for p in found), found
    assert found[0].startswith("sampling: unknown sampling [[[[...], [...], [...], [...], [...], [...], ...]")


def test_a_key_given_twice_is_refused_naming_it():
    found = _refusal(YAML + "max_total_runs: 9\n")
    assert [(p.field, p.message) for p in found] == [(
        "max_total_runs", "max_total_runs (line 13): declared twice (lines 9 and 13)")]
    found = _refusal(YAML.replace("slack_factor: 0.1", "slack_factor: 0.1, slack_factor: 0.2"))
    assert found[0].field == "policy" and found[0].message.startswith("policy.slack_factor (line 6): declared twice")


def test_a_duration_past_a_year_is_named_not_an_overflow():
    for minutes in (1e10, 10**30, 525_601):
        assert problems(base(max_duration_minutes=minutes)) == [
            f"max_duration_minutes: must be a number of minutes above 0 and at most 525,600 (a year), got {minutes:g}"
            if isinstance(minutes, float) else
            f"max_duration_minutes: must be a number of minutes above 0 and at most 525,600 (a year), got {minutes}"]
    assert check(base(max_duration_minutes=525_600), PARAMETERS, METRICS).max_duration_minutes == 525_600


def test_a_grid_is_counted_never_listed_and_one_past_the_bound_is_refused_naming_its_size():
    choices = [("momentum", "choice", [i / 1000 for i in range(150)]), ("epochs", "choice", list(range(1, 151))),
               ("model", "choice", [f"m{i}" for i in range(150)])]
    found, seconds, peak = bounded(lambda: problems(space(*choices) | {"sampling": "grid"}))
    assert seconds < 1.0 and peak < 10 * 2**20, (seconds, peak)
    assert found == ["parameter_space: the grid has 3,375,000 points (150 x 150 x 150 choices), more than the 1,000,000 a "
                     "grid sweep may have (at most 1,000 trials ever run: fewer choices, or random sampling)"]
    grid = check(space(*choices[:2], ("model", "choice", ["a", "b"])) | {"sampling": "grid"}, PARAMETERS, METRICS)
    assert grid_size(grid) == 45_000
