"""A sweep's configuration in HyperDrive's vocabulary (YAML or JSON, same shape; sweep_text reads it): check it.

    sampling: random            # random | grid | bayesian
    parameter_space: [{name: learning_rate, expression: loguniform, values: [-9, -2]}, ...]
    policy: {type: BanditPolicy, evaluation_interval: 1, slack_factor: 0.1, delay_evaluation: 0}
                                # + stop_grace_seconds (ours, 60): then a trial's command still running is ended
    primary_metric_name: validation_top1_accuracy
    primary_metric_goal: maximize
    max_total_runs: 8
    max_concurrent_runs: 2      # optional (1); max_duration_minutes, seed: optional

`check()` names every problem at once (where it is, then why), each swept name being a pipeline
parameter; `SweepConfig.as_dict()` is the canonical form, which `SweepConfig.from_dict()` reads back.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, fields
from functools import partial
from typing import Any

from designer.engine.sweep_checks import (
    Checker,
    SweepConfigInvalid,
    fmt,
    is_number,
    is_whole,
    kind_of,
    name_of,
    one_of,
)
from sdk.context import STOP_GRACE_SECONDS
from sdk.yamltext import short

KEYS = ("sampling", "parameter_space", "policy", "primary_metric_name", "primary_metric_goal",
        "max_total_runs", "max_concurrent_runs", "max_duration_minutes", "seed")
REQUIRED = ("sampling", "parameter_space", "primary_metric_name", "primary_metric_goal", "max_total_runs")
SAMPLINGS = ("random", "grid", "bayesian")
GOALS = ("maximize", "minimize")
# each expression and the names of its values, as HyperDrive documents them (choice: any number)
EXPRESSIONS: dict[str, tuple[str, ...] | None] = {
    "choice": None, "randint": ("upper",),
    "uniform": ("low", "high"), "quniform": ("low", "high", "q"),
    "loguniform": ("min_value", "max_value"), "qloguniform": ("min_value", "max_value", "q"),
    "normal": ("mu", "sigma"), "qnormal": ("mu", "sigma", "q"),
    "lognormal": ("mu", "sigma"), "qlognormal": ("mu", "sigma", "q"),
}
CONTINUOUS = ("uniform", "loguniform", "normal", "lognormal")  # no q: never a whole number
GRACE = "stop_grace_seconds"  # ours: how long a trial's script has to stop when asked before its processes are ended
POLICY_FIELDS = {
    "BanditPolicy": ("evaluation_interval", "delay_evaluation", "slack_factor", "slack_amount", GRACE),
    "MedianStoppingPolicy": ("evaluation_interval", "delay_evaluation", GRACE),
    "TruncationSelectionPolicy": ("evaluation_interval", "delay_evaluation", "truncation_percentage", GRACE),
    "NoTerminationPolicy": (),
}
MAX_STOP_GRACE_SECONDS = 86_400  # a day: an epoch longer than that is no early termination
MAX_TOTAL_RUNS, MAX_CONCURRENT_RUNS = 1000, 100  # HyperDrive's own limits
MAX_DURATION_MINUTES = 525_600  # a year: a deadline further away is no deadline (and past year 9999, none a date holds)
# points a grid sweep may have: it is counted (the product of its choices' lengths), never listed, and
# sampled one point per trial; at most max_total_runs of them ever run
MAX_GRID_POINTS = 1_000_000
MAX_EXPONENT = 709.0  # exp() of more overflows a float


@dataclass(frozen=True)
class Expression:
    name: str
    expression: str
    values: tuple


@dataclass(frozen=True)
class Policy:
    type: str
    evaluation_interval: int = 1
    delay_evaluation: int = 0
    slack_factor: float | None = None
    slack_amount: float | None = None
    truncation_percentage: float | None = None
    stop_grace_seconds: float | None = None  # None: STOP_GRACE_SECONDS

    @property
    def grace(self) -> float:
        """Seconds a trial's command asked to stop has before its processes are ended."""
        return STOP_GRACE_SECONDS if self.stop_grace_seconds is None else float(self.stop_grace_seconds)

    def as_dict(self) -> dict:
        return {"type": self.type} | {f: getattr(self, f) for f in POLICY_FIELDS[self.type] if getattr(self, f) is not None}


@dataclass(frozen=True)
class SweepConfig:
    sampling: str
    parameter_space: tuple[Expression, ...]
    policy: Policy
    primary_metric_name: str
    primary_metric_goal: str
    max_total_runs: int
    max_concurrent_runs: int
    max_duration_minutes: float | None = None
    seed: int | None = None

    def as_dict(self) -> dict:
        space = [{"name": e.name, "expression": e.expression, "values": list(e.values)} for e in self.parameter_space]
        out = {f.name: getattr(self, f.name) for f in fields(self)} | {"parameter_space": space, "policy": self.policy.as_dict()}
        return {k: v for k, v in out.items() if v is not None}

    @classmethod
    def from_dict(cls, raw: dict) -> SweepConfig:
        """Read back a stored `as_dict()`: checked on its own, not against a pipeline."""
        return check(raw, None, None)


def grid_size(config: SweepConfig) -> int | None:
    """How many points a grid sweep has (the product of its choices' lengths: counted, never listed); None otherwise."""
    return math.prod(len(e.values) for e in config.parameter_space) if config.sampling == "grid" else None


def check(raw: dict, parameters: list[dict] | None, metrics: set[str] | None) -> SweepConfig:
    """Check a configuration against the pipeline's parameter declarations ({name, type, default, min?, max?}) and
    the metric names its modules emit; None skips those checks (a stored form). Raises SweepConfigInvalid naming every problem."""
    c = Checker()
    if not isinstance(raw, dict):
        c.add("configuration", f"must be a mapping of keys (sampling, parameter_space, ...), not {kind_of(raw)}", "not_a_mapping")
        raise SweepConfigInvalid(c.problems)
    c.unknown_keys(raw, KEYS)
    for key in REQUIRED:
        if key not in raw:
            c.add(key, "missing (a sweep needs " + one_of(REQUIRED) + ")", "missing_key")
    sampling = raw.get("sampling")
    if isinstance(sampling, str) and sampling.lower().removesuffix("parametersampling") in SAMPLINGS:  # or SDK v1's class
        sampling = sampling.lower().removesuffix("parametersampling")
    elif "sampling" in raw:
        c.add("sampling", f"unknown sampling {fmt(sampling)} (one of {one_of(SAMPLINGS)})", "unknown_sampling")
    space = _space(c, raw, sampling, parameters)
    policy = _policy(c, raw.get("policy"))
    metric, goal = _metric(c, raw, metrics)
    limits = _limits(c, raw)
    if sampling == "grid" and space and not c.problems:
        _grid_bound(c, space)
    if c.problems:
        raise SweepConfigInvalid(c.problems)
    assert isinstance(sampling, str) and policy and metric and goal  # each is a problem above when missing or wrong
    return SweepConfig(sampling, space, policy, metric, goal, *limits)


def _grid_bound(c: Checker, space: tuple[Expression, ...]) -> None:
    sizes = [len(e.values) for e in space]
    size = math.prod(sizes)
    if size > MAX_GRID_POINTS:
        c.add("parameter_space", f"the grid has {size:,} points ({' x '.join(map(str, sizes))} choices), more than the "
                                 f"{MAX_GRID_POINTS:,} a grid sweep may have (at most {MAX_TOTAL_RUNS:,} trials ever run: "
                                 "fewer choices, or random sampling)", "grid_too_large")


def _metric(c: Checker, raw: dict, metrics: set[str] | None) -> tuple[str | None, str | None]:
    name, goal = raw.get("primary_metric_name"), raw.get("primary_metric_goal")
    if "primary_metric_name" in raw and (not isinstance(name, str) or not name):
        c.add("primary_metric_name", f"must be a metric's name, got {fmt(name)}", "unknown_metric")
    elif "primary_metric_name" in raw and metrics is not None and name not in metrics:
        known = f"the pipeline's modules emit {one_of(sorted(metrics))}" if metrics else "the pipeline's modules emit no metric"
        c.add("primary_metric_name", f"unknown metric {fmt(name)} ({known})", "unknown_metric")
    if isinstance(goal, str) and goal.lower() in GOALS:
        goal = goal.lower()  # HyperDrive writes MAXIMIZE
    elif "primary_metric_goal" in raw:
        c.add("primary_metric_goal", f"must be maximize or minimize, got {fmt(goal)}", "unknown_goal")
    return name, goal


def _limits(c: Checker, raw: dict) -> tuple:
    total = c.whole(raw, "max_total_runs", 1, MAX_TOTAL_RUNS) if "max_total_runs" in raw else None
    why = "at least one trial must run at a time" if raw.get("max_concurrent_runs") == 0 else ""
    concurrent = c.whole(raw, "max_concurrent_runs", 1, MAX_CONCURRENT_RUNS, why=why) if "max_concurrent_runs" in raw else 1
    duration = raw.get("max_duration_minutes")
    if duration is not None and (not is_number(duration) or not 0 < duration <= MAX_DURATION_MINUTES):
        c.add("max_duration_minutes", f"must be a number of minutes above 0 and at most {MAX_DURATION_MINUTES:,} (a year), "
                                      f"got {fmt(duration)}", "out_of_range")
    return total, concurrent, duration, None if raw.get("seed") is None else c.whole(raw, "seed", 0, 2**32 - 1)


_POLICY_ALIASES = {name.lower().removesuffix("policy"): name for name in POLICY_FIELDS}  # bandit, medianstopping, ...


def _policy(c: Checker, raw) -> Policy | None:
    """The early-termination policy (a mapping, or just its type); none given is NoTerminationPolicy."""
    raw = {"type": "NoTerminationPolicy"} if raw is None else {"type": raw} if isinstance(raw, str) else raw
    if not isinstance(raw, dict):
        return c.add("policy", f"must be a mapping such as {{type: BanditPolicy, slack_factor: 0.1}}, not {kind_of(raw)}", "invalid_policy")
    kind = raw.get("type")
    name = _POLICY_ALIASES.get(kind.lower().replace("_", "").removesuffix("policy")) if isinstance(kind, str) else None
    if name is None:
        what = "missing" if kind is None else f"unknown policy {fmt(kind)}"
        return c.add("policy.type", f"{what} (one of {one_of(POLICY_FIELDS)})", "unknown_policy")
    before = len(c.problems)
    c.unknown_keys(raw, POLICY_FIELDS[name], "policy.", name)
    values: dict[str, Any] = {"evaluation_interval": 1, "delay_evaluation": 0}
    for key, low in (("evaluation_interval", 1), ("delay_evaluation", 0)):
        if key in raw and key in POLICY_FIELDS[name]:
            values[key] = c.whole(raw, key, low, prefix="policy.")
    slack = [k for k in ("slack_factor", "slack_amount") if raw.get(k) is not None]
    if name == "BanditPolicy" and len(slack) != 1:
        c.add("policy", "BanditPolicy takes slack_factor or slack_amount, not both" if slack else
              "BanditPolicy needs slack_factor or slack_amount (how far behind the best trial a trial may fall)", "invalid_policy")
    elif name == "BanditPolicy":
        if not is_number(raw[slack[0]]) or raw[slack[0]] <= 0:
            c.add(f"policy.{slack[0]}", f"must be a number above 0, got {fmt(raw[slack[0]])}", "out_of_range")
        values[slack[0]] = raw[slack[0]]
    if name == "TruncationSelectionPolicy":
        pct = values["truncation_percentage"] = raw.get("truncation_percentage")
        if not is_number(pct) or not 1 <= pct <= 99:
            got = "missing" if pct is None else f"got {fmt(pct)}"
            c.add("policy.truncation_percentage", f"TruncationSelectionPolicy needs a percentage from 1 to 99, {got}", "out_of_range")
    grace = raw.get(GRACE)
    if grace is not None and name != "NoTerminationPolicy":
        if not is_number(grace) or not 0 <= grace <= MAX_STOP_GRACE_SECONDS:
            c.add(f"policy.{GRACE}", f"must be a number of seconds from 0 to {MAX_STOP_GRACE_SECONDS:,} (a day), got {fmt(grace)}",
                  "out_of_range")
        values[GRACE] = grace
    return Policy(name, **values) if len(c.problems) == before else None


def _space(c: Checker, raw: dict, sampling: str | None, parameters: list[dict] | None) -> tuple[Expression, ...]:
    if "parameter_space" not in raw:
        return ()
    entries = raw["parameter_space"]
    if not isinstance(entries, list) or not entries:
        not_a_list = "" if isinstance(entries, list) else f", not {kind_of(entries)}"
        return c.add("parameter_space", "must list at least one {name, expression, values}" + not_a_list, "empty_space") or ()
    declared = None if parameters is None else {p["name"]: p for p in parameters}
    space: list[Expression] = []
    seen: dict[str, int] = {}
    for i, entry in enumerate(entries):
        expression = _expression(c, i, entry, sampling, declared)
        if expression is None:
            continue
        if expression.name in seen:
            c.add(f"parameter_space[{i}]", f"{name_of(expression.name)} is swept twice (also parameter_space[{seen[expression.name]}])",
                  "duplicate_parameter", expression.name, where=f"parameter_space[{i}] ({name_of(expression.name)})")
        seen.setdefault(expression.name, i)
        space.append(expression)
    return tuple(space)


def _expression(c: Checker, i: int, entry, sampling: str | None, declared: dict | None) -> Expression | None:
    field = f"parameter_space[{i}]"
    if not isinstance(entry, dict):
        return c.add(field, f"must be a mapping {{name, expression, values}}, not {kind_of(entry)}", "invalid_expression")
    name = entry.get("name")
    where, param = (f"{field} ({name_of(name)})", name) if isinstance(name, str) else (field, None)
    before = len(c.problems)
    add = partial(c.add, field, param=param, where=where)  # add(message, code)
    keys = ("name", "expression", "values")
    odd = [f"missing {k}" for k in keys if k not in entry] + [f"unknown key {k}" for k in entry if k not in keys]
    if odd:
        add(f"{', '.join(odd)} (each entry has name, expression and values)", "invalid_expression")
    if "name" in entry and (not isinstance(name, str) or not name):
        add(f"name must be a pipeline parameter's name, got {fmt(name)}", "invalid_expression")
    kind, values = entry.get("expression"), entry.get("values")
    kind = kind.lower() if isinstance(kind, str) else kind if kind is None else short(kind)  # hashable; Choice = choice
    if "expression" in entry and kind not in EXPRESSIONS:
        add(f"unknown expression {fmt(kind)} (one of {one_of(EXPRESSIONS)})", "unknown_expression")
    shaped = kind in EXPRESSIONS and "values" in entry and _values(add, kind, values)
    if sampling == "grid" and kind in EXPRESSIONS and kind != "choice":
        add(f"grid sampling takes choice only, as HyperDrive's GridParameterSampling does (not {kind})", "grid_needs_choice")
    if "name" in entry and declared is not None:
        _against_declaration(add, name, kind, values if shaped else None, declared)
    if len(c.problems) > before:
        return None
    assert isinstance(name, str) and isinstance(kind, str) and isinstance(values, list)  # else a problem above
    return Expression(name, kind, tuple(values))


def _values(add, kind: str, values) -> bool | None:
    """The values' count, types and order for their expression (HyperDrive's meanings); True when
    they have the expression's shape (so that their range can be checked)."""
    labels = EXPRESSIONS[kind] or ()  # choice: any number
    takes = f"{kind} takes [{', '.join(labels)}]" if labels else "choice takes [value, value, ...]"
    if not isinstance(values, list):
        return add(f"values must be a list ({takes}), not {kind_of(values)}", "invalid_values")
    if kind == "choice":
        if not values:
            return add("empty choice (choice takes [value, value, ...]: at least one)", "empty_choice")
        bad = [v for v in values if not (is_number(v) or isinstance(v, (str, bool)))]
        return not bad or add(f"choice values must be numbers, strings or booleans, not {kind_of(bad[0])}", "invalid_values")
    if len(values) != len(labels):
        return add(f"{takes}, got {len(values)} value{'s' * (len(values) != 1)}", "wrong_value_count")
    named = dict(zip(labels, values))
    bad = [label for label, v in named.items() if not is_number(v)]
    if bad:
        return add(f"{' and '.join(bad)} must be {'numbers' if bad[1:] else 'a number'} ({takes}), got {fmt(named[bad[0]])}", "not_a_number")
    if kind == "randint" and (not is_whole(named["upper"]) or named["upper"] < 1):
        return add(f"upper must be a whole number of at least 1 (randint takes [upper]: 0 to upper-1), got {fmt(named['upper'])}", "out_of_range")
    if labels[0] in ("low", "min_value"):
        low, high = values[0], values[1]
        if low > high or (low == high and kind in CONTINUOUS):
            add(f"{labels[0]} ({fmt(low)}) must be below {labels[1]} ({fmt(high)}) ({takes})", "low_above_high")
        if labels[0] == "min_value" and max(abs(low), abs(high)) > MAX_EXPONENT:
            add(f"the bounds are exponents: exp({fmt(max(low, high, key=abs))}) is out of a float's range ({takes})", "out_of_range")
    if named.get("sigma", 1) <= 0:
        add(f"sigma must be above 0, got {fmt(named['sigma'])} ({takes})", "out_of_range")
    if named.get("q", 1) <= 0:
        add(f"q must be above 0, got {fmt(named['q'])} ({takes})", "out_of_range")
    return True


def _against_declaration(add, name, kind, values, declared: dict) -> None:
    """The swept name is a pipeline parameter, and the expression fits its type and range."""
    if not isinstance(name, str) or name not in declared:
        known = f"declared: {one_of(declared)}" if declared else "this pipeline declares no parameters"
        return add(f"unknown pipeline parameter {fmt(name)} ({known})", "unknown_parameter")
    if kind not in EXPRESSIONS or not isinstance(values, list):
        return None
    ptype = declared[name].get("type")
    if ptype in ("bool", "string") and kind != "choice":
        return add(f"{name} is a {ptype} parameter: only choice fits it (got {kind})", "type_mismatch")
    article = "an" if ptype == "int" else "a"
    if ptype == "int" and kind in CONTINUOUS:
        return add(f"{name} is an int parameter: {kind} draws fractional values (use choice, randint or q{kind} with a whole q)",
                   "type_mismatch")
    labels = EXPRESSIONS[kind]
    if ptype == "int" and labels and labels[-1] == "q" and len(values) == 3 and is_number(values[2]) and not is_whole(values[2]):
        return add(f"{name} is an int parameter: q must be a whole number, got {fmt(values[2])}", "type_mismatch")
    if kind == "choice":
        fits = {"int": is_whole, "float": is_number, "bool": lambda v: isinstance(v, bool), "string": lambda v: isinstance(v, str)}.get(ptype)
        wrong = [v for v in values if fits and not fits(v)]
        if wrong:
            quote = " (quote it in YAML)" if ptype == "string" and isinstance(wrong[0], bool) else ""
            return add(f"{name} is {article} {ptype} parameter: choice value {fmt(wrong[0])} is not {article} {ptype}{quote}",
                       "type_mismatch")
    return _in_range(add, name, kind, values, declared[name])


def _in_range(add, name: str, kind: str, values: list, declaration: dict) -> None:
    """Bounded expressions stay inside the declared min/max (normal-family draws are clipped to it)."""
    low, high = declaration.get("min"), declaration.get("max")
    if low is None and high is None:
        return None
    if kind == "choice":
        ends = {fmt(v): v for v in values}
    elif kind == "randint":
        ends = {f"randint draw {fmt(v)}": v for v in (0, values[0] - 1)}
    elif kind in ("uniform", "quniform"):
        ends = {f"low {fmt(values[0])}": values[0], f"high {fmt(values[1])}": values[1]}
    elif kind in ("loguniform", "qloguniform") and max(map(abs, values[:2])) <= MAX_EXPONENT:
        ends = {f"exp({fmt(v)}) = {math.exp(v):.4g}": math.exp(v) for v in values[:2]}
    else:
        return None
    for label, v in ends.items():
        if (low is not None and v < low) or (high is not None and v > high):
            side = f"below min {fmt(low)}" if low is not None and v < low else f"above max {fmt(high)}"
            return add(f"{label} is {side} of {name} (declared range {fmt(low)}..{fmt(high)})", "out_of_range")
    return None
