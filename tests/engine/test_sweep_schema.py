"""The JSON Schema of a sweep configuration (designer/engine/sweep_schema.py), made from the
checker's declarations: it accepts every configuration the checker accepts (HyperDrive's capitals
and aliases included), refuses what the checker refuses for its shape, and the page's copy of it
(static/js/sweepschema.js) is current. What needs the pipeline stays the checker's alone."""
from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest

from designer.engine import sweep_schema
from designer.engine.sweep_config import SweepConfigInvalid, check
from designer.engine.sweep_text import parse_text
from tests.engine.test_sweep_config import METRICS, PARAMETERS, base, space

ROOT = Path(__file__).resolve().parents[2]

VALIDATOR = jsonschema.Draft202012Validator(sweep_schema.schema())


def test_the_schema_is_a_json_schema_and_the_pages_copy_is_current():
    jsonschema.Draft202012Validator.check_schema(sweep_schema.schema())
    assert sweep_schema.MODULE.read_text(encoding="utf-8") == sweep_schema.module_text(), \
        "static/js/sweepschema.js is not current: run `python -m designer.engine.sweep_schema`"


ACCEPTED = {
    "the documented example": base(),
    "HyperDrive's capitals": base(primary_metric_goal="MAXIMIZE", sampling="Random"),
    "a policy by its short name": base(policy={"type": "median_stopping"}),
    "a policy as a bare name": base(policy="NoTerminationPolicy"),
    "no policy": base(policy=None),
    "SDK v1's class names and functions": space(("batch_size", "Choice", [16, 32])) | {"sampling": "GridParameterSampling"},
    "a log-uniform": space(("learning_rate", "LogUniform", [-9, -2])),
    "a truncation policy": base(policy={"type": "TruncationSelectionPolicy", "truncation_percentage": 20,
                                        "stop_grace_seconds": 5}),
    "the smallest": base(max_concurrent_runs=None, max_duration_minutes=None, seed=None, policy=None),
    "an example's HyperDrive file": parse_text((ROOT / "examples/components/azureml_run_logging/hdconfig.yml").read_text()),
}


@pytest.mark.parametrize("name", ACCEPTED)
def test_every_configuration_the_checker_accepts_is_valid_for_the_schema(name):
    raw = ACCEPTED[name]
    check(raw, None, None)
    assert not list(VALIDATOR.iter_errors(raw)), [e.message for e in VALIDATOR.iter_errors(raw)]


REFUSED = {
    "an unknown key": base(max_trials=8),
    "a missing key": {k: v for k, v in base().items() if k != "max_total_runs"},
    "an unknown sampling": base(sampling="sobol"),
    "an empty space": base(parameter_space=[]),
    "an unknown expression": space(("learning_rate", "gaussian", [0, 1])),
    "too few values": space(("learning_rate", "uniform", [0.1])),
    "values that are not numbers": space(("learning_rate", "uniform", ["a", "b"])),
    "an entry without values": base(parameter_space=[{"name": "learning_rate", "expression": "choice"}]),
    "an unknown policy": base(policy={"type": "SlowPolicy"}),
    "both slacks": base(policy={"type": "BanditPolicy", "slack_factor": 0.1, "slack_amount": 0.2}),
    "no slack": base(policy={"type": "BanditPolicy"}),
    "a field of another policy": base(policy={"type": "MedianStoppingPolicy", "slack_factor": 0.1}),
    "a truncation of 100%": base(policy={"type": "TruncationSelectionPolicy", "truncation_percentage": 100}),
    "no trials": base(max_total_runs=0),
    "more trials than HyperDrive's limit": base(max_total_runs=1001),
    "a fractional limit": base(max_concurrent_runs=1.5),
    "an unknown goal": base(primary_metric_goal="largest"),
    "a negative duration": base(max_duration_minutes=-1),
}


@pytest.mark.parametrize("name", REFUSED)
def test_the_schema_refuses_what_the_checker_refuses_for_its_shape(name):
    raw = REFUSED[name]
    with pytest.raises(SweepConfigInvalid):
        check(raw, None, None)
    assert list(VALIDATOR.iter_errors(raw))


# only the checker: what needs the pipeline, or arithmetic a schema does not do
ONLY_THE_CHECKER = {
    "a name that is no parameter": space(("lr", "choice", [0.1])),
    "values outside the declared range": space(("learning_rate", "uniform", [0.5, 2.0])),
    "low above high": space(("momentum", "uniform", [0.9, 0.1])),
    "an unknown metric": base(primary_metric_name="f1"),
    "a grid of continuous values": space(("momentum", "uniform", [0.1, 0.9])) | {"sampling": "grid"},
}


@pytest.mark.parametrize("name", ONLY_THE_CHECKER)
def test_what_needs_the_pipeline_is_the_checkers_with_its_wording(name):
    raw = ONLY_THE_CHECKER[name]
    assert not list(VALIDATOR.iter_errors(raw))
    with pytest.raises(SweepConfigInvalid):
        check(raw, PARAMETERS, METRICS)


@pytest.mark.django_db
def test_the_server_serves_it_to_anyone(client):
    answer = client.get("/api/schemas/sweep-config.json")
    assert answer.status_code == 200 and answer.json() == sweep_schema.schema()
