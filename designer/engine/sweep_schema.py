"""The JSON Schema of a sweep configuration (sweep_config.py's shape), made from the checker's own
declarations so that the two cannot drift. The server serves it (/api/schemas/sweep-config.json,
and in the OpenAPI document as the body of POST /api/sweeps); the page's sweep form reads its
vocabulary from it (static/js/sweepschema.js, this schema written as a module:
`python -m designer.engine.sweep_schema` writes it, tests/sweeps/test_sweep_schema.py checks it is
current); an editor's YAML support reads it too (`# yaml-language-server: $schema=...`).

The schema says what a well-formed configuration is: its keys, the samplings, expressions and
their values, the policies and their fields, the limits. What needs the pipeline (a swept name
that is a parameter of it, values in its range, a metric its modules emit) and the friendly
wording of every problem stay sweep_config.check()'s.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from designer.engine.sweep_config import (
    EXPRESSIONS,
    GOALS,
    GRACE,
    KEYS,
    MAX_CONCURRENT_RUNS,
    MAX_DURATION_MINUTES,
    MAX_STOP_GRACE_SECONDS,
    MAX_TOTAL_RUNS,
    POLICY_FIELDS,
    REQUIRED,
    SAMPLINGS,
)

ID = "/api/schemas/sweep-config.json"
MODULE = Path(__file__).resolve().parents[2] / "static" / "js" / "sweepschema.js"
NUMBER = {"type": "number"}
POLICY_VALUES = {
    "evaluation_interval": {"type": "integer", "minimum": 1, "description": "epochs between two checks"},
    "delay_evaluation": {"type": "integer", "minimum": 0, "description": "epochs before the first check"},
    "slack_factor": {"type": "number", "exclusiveMinimum": 0, "description": "ratio to the best trial (or slack_amount)"},
    "slack_amount": {"type": "number", "exclusiveMinimum": 0, "description": "absolute distance to the best trial (or slack_factor)"},
    "truncation_percentage": {"type": "number", "minimum": 1, "maximum": 99, "description": "% of the trials cut at each check"},
    GRACE: {"type": "number", "minimum": 0, "maximum": MAX_STOP_GRACE_SECONDS,
            "description": "seconds a stopped trial's script has to end before its processes are (default 60)"},
}
POLICY_NEEDS: dict[str, dict] = {"BanditPolicy": {"oneOf": [{"required": ["slack_factor"]}, {"required": ["slack_amount"]}]},
                "TruncationSelectionPolicy": {"required": ["truncation_percentage"]}}


def any_case(*words: str) -> str:
    """A pattern matching each word whatever its letters' case (the checker lowercases them)."""
    return "^(?:" + "|".join("".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() else re.escape(c) for c in w)
                             for w in words) + ")$"


def _expression(name: str, values: tuple[str, ...] | None) -> dict:
    items = {"type": "array", "minItems": 1, "description": "the choices (any number)"} if values is None else {
        "type": "array", "items": NUMBER, "minItems": len(values), "maxItems": len(values),
        "prefixItems": [{**NUMBER, "title": v} for v in values], "description": ", ".join(values)}
    return {"type": "object", "additionalProperties": False, "required": ["name", "expression", "values"],
            "properties": {"name": {"type": "string", "minLength": 1, "description": "a pipeline parameter's name"},
                           "expression": {"type": "string", "pattern": any_case(name), "title": name},
                           "values": items}}


def policy_pattern(name: str) -> str:
    """BanditPolicy, Bandit, bandit, BANDIT_POLICY...: the checker drops underscores and case, and
    the suffix 'policy' is optional."""
    def loose(word: str) -> str:
        return "_*".join(f"[{c.lower()}{c.upper()}]" for c in word)
    return f"^_*{loose(name.lower().removesuffix('policy'))}(?:_*{loose('policy')})?_*$"


def _policy(name: str, fields: tuple[str, ...]) -> dict:
    return {"type": "object", "additionalProperties": False, "required": ["type"], "title": name,
            "properties": {"type": {"type": "string", "pattern": policy_pattern(name)},
                           **{f: POLICY_VALUES[f] for f in fields}}, **POLICY_NEEDS.get(name, {})}


def schema() -> dict:
    policies = [_policy(name, fields) for name, fields in POLICY_FIELDS.items()]
    names = [policy_pattern(name) for name in POLICY_FIELDS]
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema", "$id": ID,
        "title": "Sweep configuration",
        "description": "A sweep of a pipeline's parameters in HyperDrive's vocabulary (YAML or JSON).",
        "type": "object", "additionalProperties": False, "required": list(REQUIRED),
        "propertyNames": {"enum": list(KEYS)},
        "properties": {
            "sampling": {"type": "string", "pattern": any_case(*SAMPLINGS, *(f"{s}ParameterSampling" for s in SAMPLINGS)),
                         "examples": list(SAMPLINGS), "description": "how trials' values are drawn"},
            "parameter_space": {"type": "array", "minItems": 1, "description": "what is swept, one entry a parameter",
                                "items": {"oneOf": [_expression(n, v) for n, v in EXPRESSIONS.items()]}},
            "policy": {"description": "early termination (none: every trial runs to its end)",
                       "anyOf": [{"type": "null"}, {"type": "string", "pattern": "|".join(names)}, *policies]},
            "primary_metric_name": {"type": "string", "minLength": 1, "description": "a metric the pipeline's modules emit"},
            "primary_metric_goal": {"type": "string", "pattern": any_case(*GOALS), "examples": list(GOALS)},
            "max_total_runs": {"type": "integer", "minimum": 1, "maximum": MAX_TOTAL_RUNS},
            "max_concurrent_runs": {"type": "integer", "minimum": 1, "maximum": MAX_CONCURRENT_RUNS, "default": 1},
            "max_duration_minutes": {"anyOf": [{"type": "null"}, {"type": "number", "exclusiveMinimum": 0,
                                                                   "maximum": MAX_DURATION_MINUTES}]},
            "seed": {"anyOf": [{"type": "null"}, {"type": "integer", "minimum": 0, "maximum": 2**32 - 1}]},
        },
    }


def module_text() -> str:
    """static/js/sweepschema.js: the schema as a module the page and Node's tests import."""
    return ("// Written by `python -m designer.engine.sweep_schema` from designer/engine/sweep_config.py's declarations:\n"
            "// do not edit (tests/sweeps/test_sweep_schema.py fails when it is not current).\n"
            f"export default {json.dumps(schema(), separators=(',', ':'))};\n")


if __name__ == "__main__":
    MODULE.write_text(module_text(), encoding="utf-8")
    sys.stdout.write(f"wrote {MODULE}\n")
