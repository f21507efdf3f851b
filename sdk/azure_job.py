"""Azure ML's v2 job files (`az ml job create --file job.yml`) as the designer runs them: a command
job (`$schema: .../commandJob.schema.json`) or a sweep job (`type: sweep`, its `trial`), each a
component (an Azure ML v2 command component file, sdk/azure_component.py) with a one-node
pipeline, and for a sweep a sweep configuration in the designer's HyperDrive vocabulary
(designer/engine/sweep_config.py). `translate()` names every problem with the job field's path.

    command job                       the component: code, command, environment, distribution,
                                      resources, outputs; a literal input (epochs: 10) is a scalar
                                      input whose default is that value
    display_name, experiment_name, tags, description    the run's (or the sweep's) name, experiment, tags
    sweep job: trial {command, code, environment, ...}  the component; ${{search_space.X}} is its input X,
                                      bound to the pipeline parameter X that the sweep samples
    sampling_algorithm, search_space, objective, limits, early_termination   the sweep configuration
    compute, name, services, identity accepted and not used (the designer's workers run it)

A data input (`azureml:...`, `path: ...`) is refused, naming it: give the job's data as a
component input in a pipeline of the designer. Imports nothing of the project but the SDK.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from sdk import azure_component
from sdk.yamltext import short

JOB_SCHEMAS = ("commandJob", "sweepJob")
COMMON = ("$schema", "type", "name", "display_name", "experiment_name", "description", "tags", "compute",
          "services", "identity", "inputs", "outputs", "properties")
COMMAND_FIELDS = (*COMMON, "code", "command", "environment", "environment_variables", "distribution", "resources",
                  "limits")
SWEEP_FIELDS = (*COMMON, "trial", "sampling_algorithm", "search_space", "objective", "limits", "early_termination")
TRIAL_FIELDS = ("code", "command", "environment", "distribution", "resources")
IGNORED = ("compute", "services", "identity", "name", "properties")  # Azure's placement and naming: the workers run it
SAMPLINGS = {"random": "random", "grid": "grid", "bayesian": "bayesian"}
# Azure's search space, each expression's fields in the order HyperDrive's expression takes its values
EXPRESSIONS = {"choice": ("values",), "randint": ("upper",), "uniform": ("min_value", "max_value"),
               "quniform": ("min_value", "max_value", "q"), "loguniform": ("min_value", "max_value"),
               "qloguniform": ("min_value", "max_value", "q"), "normal": ("mu", "sigma"), "qnormal": ("mu", "sigma", "q"),
               "lognormal": ("mu", "sigma"), "qlognormal": ("mu", "sigma", "q")}
POLICIES = {"bandit": ("BanditPolicy", ("evaluation_interval", "delay_evaluation", "slack_factor", "slack_amount")),
            "median_stopping": ("MedianStoppingPolicy", ("evaluation_interval", "delay_evaluation")),
            "truncation_selection": ("TruncationSelectionPolicy",
                                     ("evaluation_interval", "delay_evaluation", "truncation_percentage"))}
NODE_ID = "job"
_SEARCH = re.compile(r"\$\{\{\s*search_space\s*\.\s*(\w+)\s*\}\}")


class JobError(ValueError):
    """A job file refused: `.problems`, each (field path, reason)."""

    def __init__(self, file, problems: list[tuple[str, str]]):
        self.file, self.problems = str(file), problems
        super().__init__("\n".join(f"{self.file}: {f}: {r}" for f, r in problems))


@dataclass
class Job:
    """What a job file runs: `component` (the fields of an Azure ML v2 command component file) and
    the folder of its code; `pipeline` (a one-node pipeline document of that component); `sweep` (a
    sweep configuration, for a sweep job); the run's `name`, `experiment` and `tags`."""

    component: dict
    code: Path | None
    pipeline: dict
    sweep: dict | None = None
    name: str | None = None
    experiment: str | None = None
    tags: dict = field(default_factory=dict)


def is_job(data) -> bool:
    schema = data.get("$schema") if isinstance(data, dict) else None
    m = azure_component.SCHEMA_PATTERN.search(schema) if isinstance(schema, str) else None
    return bool(m and m.group(1) in JOB_SCHEMAS) or (isinstance(data, dict) and data.get("type") == "sweep")


def translate(data: dict, file, kind: str) -> Job:
    """The job of a job file's fields (`file`: where it is, for its code folder and messages; `kind`:
    the component's kind). JobError with every problem."""
    problems: list[tuple[str, str]] = []
    add = problems.append
    if not isinstance(data, dict):
        raise JobError(file, [("file", "expected a mapping of a job's fields")])
    sweep = _check_kind(data, add)
    trial: dict = data.get("trial") if sweep else data  # type: ignore[assignment]
    if not isinstance(trial, dict):
        add(("trial", f"expected the trial's mapping (command, code, environment...), got {short(trial)}"))
        trial = {}
    where = "trial." if sweep else ""
    for key in trial if sweep else ():
        if key not in TRIAL_FIELDS:
            add((f"trial.{key}", f"not supported in a trial (its fields: {', '.join(TRIAL_FIELDS)})"))
    space = _search_space(data.get("search_space"), add) if sweep else {}
    component = _component(data, trial, space, kind, where, add)
    folder = _code(trial.get("code"), file, where, add)
    node = {"id": NODE_ID, "kind": kind, "parameters": component.pop("_values")}
    pipeline = {"schema_version": 1, "name": _text(data.get("display_name")) or kind, "nodes": [node], "links": []}
    config = None
    if sweep:
        config = _sweep_config(data, space, add)  # (takes each parameter's expression)
        if isinstance(config.get("primary_metric_name"), str):  # the metric the script logs: what a sweep may optimise
            component["metrics"] = [config["primary_metric_name"]]
        pipeline["parameters"] = [{"name": name, **declared} for name, (_, declared) in space.items()]
        node["bindings"] = {name: name for name in space}
    limits = data.get("limits") if isinstance(data.get("limits"), dict) else {}
    timeout = limits.get("trial_timeout" if sweep else "timeout")  # type: ignore[union-attr]
    if timeout is not None:
        node["run_settings"] = {"timeout_seconds": timeout}
    tags = data.get("tags") or {}
    if not isinstance(tags, dict):
        add(("tags", f"expected a mapping of names to values, got {short(tags)}"))
        tags = {}
    if problems:
        raise JobError(file, problems)
    return Job(component=component, code=folder, pipeline=pipeline, sweep=config, name=_text(data.get("display_name")),
               experiment=_text(data.get("experiment_name")), tags={str(k): v for k, v in tags.items()})


def _check_kind(data: dict, add) -> bool:
    """Whether the file is a sweep job; its schema, type and fields checked."""
    schema = data.get("$schema")
    m = azure_component.SCHEMA_PATTERN.search(schema) if isinstance(schema, str) else None
    sweep = data.get("type") == "sweep" or (m is not None and m.group(1) == "sweepJob")
    if m is None and schema is not None:
        add(("$schema", f"{short(schema)} is not an Azure ML job schema's address"))
    elif m is not None and m.group(1) not in JOB_SCHEMAS:
        add(("$schema", f"{m.group(1)}: not a command or sweep job (pipeline jobs are not read yet: import the "
                        "pipeline on the canvas)"))
    kind_field = data.get("type", "sweep" if sweep else "command")
    if kind_field not in ("command", "sweep"):
        add(("type", f"{short(kind_field)}: not supported: a command or sweep job"))
    allowed = SWEEP_FIELDS if sweep else COMMAND_FIELDS
    for key in data:
        if key not in allowed:
            add((str(key), f"not a field of a {'sweep' if sweep else 'command'} job the designer reads (its fields: "
                           f"{', '.join(allowed)})"))
    return sweep


def _component(data: dict, trial: dict, space: dict, kind: str, where: str, add) -> dict:
    """The fields of the job's component (an Azure ML v2 command component file), and under "_values"
    the node's values of its literal inputs."""
    command = trial.get("command")
    if not isinstance(command, str) or not command.strip():
        add((f"{where}command", "missing: the command line the job runs"))
        command = ""
    inputs, values = _inputs(data.get("inputs"), add)
    for name, (decl, _) in space.items():
        if name in inputs:
            add((f"search_space.{name}", "also an input of the job: a name is swept or given, not both"))
        inputs[name] = decl
    for name in _SEARCH.findall(command):
        if name not in space:
            add((f"{where}command", f"${{{{search_space.{name}}}}} names nothing of search_space "
                                     f"(its names: {', '.join(space) or 'none'})"))
    command = _SEARCH.sub(lambda m: f"${{{{inputs.{m.group(1)}}}}}", command)
    component = {"$schema": f"https://azuremlschemas.azureedge.net/latest/{azure_component.COMPONENT_SCHEMA}.schema.json",
                 "type": "command", "name": kind, "display_name": _text(data.get("display_name")) or kind,
                 "version": 1, "command": command, "inputs": inputs, "_values": values}
    if _text(data.get("description")):
        component["description"] = data["description"]
    for key in ("environment", "distribution", "resources"):
        if trial.get(key) is not None:
            component[key] = trial[key]
    if data.get("outputs") is not None:
        component["outputs"] = data["outputs"]
    return component


def _code(code, file, where: str, add) -> Path | None:
    """The job's code folder, beside its file."""
    if code is None:
        return None
    if not isinstance(code, str) or re.match(r"^(azureml:|https?://|git\+)", code.strip()):
        add((f"{where}code", f"{short(code)}: only a local folder beside the job file is read here"))
        return None
    folder = (Path(file).parent / code.strip()).resolve()
    if not folder.is_dir():
        add((f"{where}code", f"{short(code)}: no such folder beside the job file"))
    return folder


def _text(value) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


def _inputs(raw, add) -> tuple[dict, dict]:
    """(the component's inputs, the node's parameter values) of a job's inputs: a literal is a scalar
    input of its type, given that value; a data input is refused."""
    if raw is None:
        return {}, {}
    if not isinstance(raw, dict):
        add(("inputs", f"expected a mapping of names to values, got {short(raw)}"))
        return {}, {}
    inputs, values = {}, {}
    for name, value in raw.items():
        if isinstance(value, dict) and value.get("type") in azure_component.SCALARS and "path" not in value:
            inputs[name] = value  # declared as a component's: {type: integer, default: 3}
            continue
        if isinstance(value, bool):
            kind = "boolean"
        elif isinstance(value, int):
            kind = "integer"
        elif isinstance(value, float):
            kind = "number"
        elif isinstance(value, str) and not value.startswith("azureml:"):
            kind = "string"
        else:
            add((f"inputs.{name}", f"{short(value)}: a data input is not read from a job file yet: run the component "
                                   "in a pipeline, with its data from a Dataset node"))
            continue
        inputs[name] = {"type": kind, "default": value}
        values[name] = value
    return inputs, values


def _search_space(raw, add) -> dict[str, tuple[dict, dict]]:
    """name -> (the component's input, the pipeline parameter the sweep samples), with the expression
    kept in the parameter under "_expression" until _sweep_config reads it."""
    if not isinstance(raw, dict) or not raw:
        add(("search_space", f"expected a mapping of names to expressions ({{type: choice, values: [...]}}), got "
                             f"{short(raw)}"))
        return {}
    space = {}
    for name, decl in raw.items():
        where = f"search_space.{name}"
        kind = decl.get("type") if isinstance(decl, dict) else None
        if kind not in EXPRESSIONS:
            add((f"{where}.type", f"{short(kind)} is not an expression (one of: {', '.join(EXPRESSIONS)})"))
            continue
        for key in decl:
            if key not in ("type", *EXPRESSIONS[kind]):
                add((f"{where}.{key}", f"not a field of {kind} (its fields: {', '.join(EXPRESSIONS[kind])})"))
        missing = [k for k in EXPRESSIONS[kind] if k not in decl]
        if missing:
            add((f"{where}.{missing[0]}", "missing"))
            continue
        values = decl["values"] if kind == "choice" else [decl[k] for k in EXPRESSIONS[kind]]
        if kind == "choice" and (not isinstance(values, list) or not values):
            add((f"{where}.values", f"expected a non-empty list, got {short(values)}"))
            continue
        if kind == "choice" and all(isinstance(v, str) for v in values):
            input_type, parameter = "string", {"type": "string", "default": values[0]}
        elif kind == "choice" and all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            input_type, parameter = "integer", {"type": "int", "default": values[0]}
        elif kind == "choice" and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            input_type, parameter = "number", {"type": "float", "default": float(values[0])}
        elif kind == "choice":
            add((f"{where}.values", "mixes texts and numbers: the values of one choice are of one kind"))
            continue
        elif kind == "randint":
            input_type, parameter = "integer", {"type": "int", "default": 0}
        else:
            input_type, parameter = "number", {"type": "float", "default": _middle(kind, values)}
        space[name] = ({"type": input_type}, {**parameter, "_expression": {"expression": kind, "values": values}})
    return space


def _middle(kind: str, values: list) -> float:
    """A default of a continuous parameter (a trial always gives its own value)."""
    try:
        lo, hi = float(values[0]), float(values[1])
    except (TypeError, ValueError):
        return 0.0
    if kind in ("loguniform", "qloguniform"):
        return math.exp((lo + hi) / 2) if max(abs(lo), abs(hi)) < 700 else 0.0
    return lo if kind.endswith("normal") else (lo + hi) / 2


def _sweep_config(data: dict, space: dict, add) -> dict:
    parameters = []
    for name, (_, declared) in space.items():
        parameters.append({"name": name, **declared.pop("_expression")})
    sampling = data.get("sampling_algorithm", "random")
    seed = None
    if isinstance(sampling, dict):
        seed = sampling.get("seed")
        sampling = sampling.get("type")
    if sampling not in SAMPLINGS:
        add(("sampling_algorithm", f"{short(sampling)} is not a sampling (one of: {', '.join(SAMPLINGS)})"))
    objective: dict = data.get("objective") if isinstance(data.get("objective"), dict) else {}  # type: ignore[assignment]
    if not objective:
        add(("objective", "missing: {goal: minimize or maximize, primary_metric: the metric the script logs}"))
    limits: dict = data.get("limits") if isinstance(data.get("limits"), dict) else {}  # type: ignore[assignment]
    config = {"sampling": SAMPLINGS.get(sampling, "random"), "parameter_space": parameters,
              "primary_metric_name": objective.get("primary_metric"), "primary_metric_goal": objective.get("goal"),
              "max_total_runs": limits.get("max_total_trials", 1), "max_concurrent_runs": limits.get("max_concurrent_trials", 1),
              "policy": _policy(data.get("early_termination"), add)}
    if limits.get("timeout") is not None:
        config["max_duration_minutes"] = max(1, math.ceil(limits["timeout"] / 60)) \
            if isinstance(limits["timeout"], (int, float)) and not isinstance(limits["timeout"], bool) else limits["timeout"]
    for key in limits:
        if key not in ("max_total_trials", "max_concurrent_trials", "timeout", "trial_timeout"):
            add((f"limits.{key}", "not supported (the fields: max_total_trials, max_concurrent_trials, timeout, "
                                  "trial_timeout)"))
    if seed is not None:
        config["seed"] = seed
    return config


def _policy(raw, add) -> dict:
    if raw is None:
        return {"type": "NoTerminationPolicy"}
    kind = raw.get("type") if isinstance(raw, dict) else None
    if not isinstance(raw, dict) or kind not in POLICIES:
        add(("early_termination.type", f"{short(kind)} is not a policy (one of: {', '.join(POLICIES)})"))
        return {"type": "NoTerminationPolicy"}
    name, keys = POLICIES[kind]
    for key in raw:
        if key not in ("type", *keys):
            add((f"early_termination.{key}", f"not a field of {kind} (its fields: {', '.join(keys)})"))
    return {"type": name, **{k: raw[k] for k in keys if k in raw}}
