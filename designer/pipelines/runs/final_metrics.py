"""A run's final metrics: for each metric its nodes logged, the last value and the best one, kept
on the run as it ends (`Run.metrics`), so that the Jobs page and the API show, filter and sort by
them without reading any event.

    {"accuracy": {"last": 0.91, "best": 0.93, "node": "train", "steps": 5}, ...}

A metric is named by its name alone; when a second node logs the same name, its entry is
`<name> (<node id>)`. "best" is the lowest value of a loss or error, the highest of an accuracy
or a throughput, and null for a metric with no better way (a learning rate, a count). A node a run
reused brings the metrics of the run that computed its outputs, as it brings their files."""
from __future__ import annotations

import math
from collections.abc import Iterable

from designer.engine import statuses as st
from designer.pipelines.models import Event, NodeRun

# which way is better (the sweeps' comparison highlights the best final value with it too)
_LOWER_IS_BETTER = ("loss", "error", "seconds", "duration")
_HIGHER_IS_BETTER = ("accuracy", "top1", "top5", "precision", "recall", "f1", "auc", "per_second", "score")


def goal_of(name: str) -> str | None:
    """"minimize" for a loss or an error, "maximize" for an accuracy or a throughput, else None."""
    low = name.lower()
    if any(w in low for w in _LOWER_IS_BETTER):
        return "minimize"
    if any(w in low for w in _HIGHER_IS_BETTER):
        return "maximize"
    return None


def is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def summarise(logged: Iterable[tuple[str, dict]]) -> dict:
    """{key: {last, best, node, steps}} of (node id, metric event data) pairs in the order logged.
    A step logged again (a training that went on from its checkpoint after its worker was lost
    computes the epochs after it once more) counts once, with its later value."""
    per_node: dict[tuple[str, str], dict] = {}  # {(name, node): {step: value}}
    last: dict[tuple[str, str], float] = {}
    for node_id, data in logged:
        name, value = (data.get("name"), data.get("value")) if isinstance(data, dict) else (None, None)
        if not isinstance(name, str) or not name or not is_number(value):
            continue
        values = per_node.setdefault((name, node_id), {})
        step = data.get("step")
        values[step if isinstance(step, int) and not isinstance(step, bool) else f"#{len(values)}"] = value
        last[name, node_id] = value
    named: dict[str, dict] = {}
    for (name, node_id), values in per_node.items():
        goal = goal_of(name)
        best = (min if goal == "minimize" else max)(values.values()) if goal else None
        named[name if name not in named else f"{name} ({node_id})"] = \
            {"last": last[name, node_id], "best": best, "node": node_id, "steps": len(values)}
    return named


def of_run(run_id: int) -> dict:
    """The final metrics of run `run_id` from its stored events (and its reused nodes' sources)."""
    reused = {(src_run, src_node): node_id for node_id, src_run, src_node in
              NodeRun.objects.filter(run_id=run_id, status=st.REUSED, reused_from__isnull=False)
              .values_list("node_id", "reused_from__run_id", "reused_from__node_id")}
    logged: list[tuple[int, str, dict]] = []
    for src_run in {r for r, _ in reused}:
        logged += [(order, reused[(src_run, node)], data) for order, node, data in _metric_events(src_run)
                   if (src_run, node) in reused]
    own = list(_metric_events(run_id))
    # a reused node's metrics come before the run's own (they were logged before it was submitted)
    return summarise([(node, data) for _, node, data in sorted(logged, key=lambda x: x[0])] +
                     [(node, data) for _, node, data in own])


def _metric_events(run_id: int):
    return Event.objects.filter(run_id=run_id, type="metric").order_by("id").values_list("id", "node_id", "data")
