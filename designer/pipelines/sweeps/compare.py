"""Runs side by side (GET /api/runs/compare?runs=1,2,3; the page /runs/compare shows the same):
the parameters and run settings that differ between them, and every metric each run reported,
its final value and its curve. Nodes are matched by node id and module kind, so runs of one
pipeline line up node by node, and runs of different pipelines still show what they share."""
from __future__ import annotations

import json
import re

from django.core.exceptions import ObjectDoesNotExist
from django.http import JsonResponse

from designer.engine import graph, targets
from designer.engine import statuses as st
from designer.engine.problems import node_names
from designer.pipelines.catalogue.service import get_catalogue
from designer.pipelines.models import Event, NodeRun, Run
from designer.pipelines.openapi import ANY, INT, NUM, STR, TIME, Op, arr, maybe, named, obj
from designer.pipelines.runs import artifacts
from designer.pipelines.runs.final_metrics import goal_of  # which way is better: the best final value is marked
from designer.pipelines.runs.final_metrics import is_number as _is_number
from designer.pipelines.web import BadRequest, api

MIN_RUNS, MAX_RUNS = 2, 10
_ID = re.compile(r"[0-9]{1,18}")


COMPARED = named("RunsCompared", obj({
    "runs": arr(obj({"id": INT, "name": STR, "pipeline": maybe(INT), "status": STR, "shown_status": STR,
                     "submitted_at": TIME, "parameters": obj(), "trial": maybe(obj({"sweep": INT, "number": INT}))})),
    "differences": arr(obj({"key": STR, "label": STR, "values": arr(ANY)})),
    "metrics": arr(obj({"node": STR, "kind": STR, "label": STR, "name": STR, "step": STR, "goal": maybe(STR),
                        "final": arr(maybe(NUM)), "curves": arr(arr(arr(NUM))), "kept_step": arr(maybe(INT)),
                        "kept": arr(maybe(NUM))}))}))


def run_ids(given: list[str]) -> list[int]:
    """The run ids of `?runs=1,2&runs=3` (the API's comma list and a form's repeated field alike),
    in order, each once. Raises BadRequest (400) naming a bad id, too few or too many."""
    ids: list[int] = []
    for raw in given:
        for part in (p.strip() for p in raw.split(",")):
            if not part:
                continue
            if not _ID.fullmatch(part):
                raise BadRequest(f"runs: {part[:40]!r} is not a run id (give run ids separated by commas, e.g. ?runs=4,7)")
            if int(part) not in ids:
                ids.append(int(part))
    if len(ids) < MIN_RUNS:
        got = "no run was given" if not ids else f"only run {ids[0]} was given"
        raise BadRequest(f"comparing needs at least {MIN_RUNS} runs: {got} (e.g. ?runs=4,7)")
    if len(ids) > MAX_RUNS:
        raise BadRequest(f"at most {MAX_RUNS} runs can be compared at once: {len(ids)} were given")
    return ids


def owned_runs(user, ids: list[int]) -> list[Run]:
    """The user's runs of these ids, oldest first (columns read in the order the runs were
    submitted, however they were picked). Another user's run answers as an unknown one (404
    naming only the id that was given)."""
    found = {r.id: r for r in Run.objects.filter(owner=user, pk__in=ids).select_related("trial")}
    missing = [i for i in ids if i not in found]
    if missing:
        raise BadRequest(f"run {missing[0]} not found", status=404)
    return [found[i] for i in sorted(ids)]


def compare(user, given: list[str]) -> dict:
    runs = owned_runs(user, run_ids(given))
    catalogue = get_catalogue(user)
    return {"runs": [run_entry(r) for r in runs], "differences": differences(runs, catalogue),
            "metrics": metrics(runs, catalogue)}


@api("GET", doc={"GET": Op(
    "Compare 2 to 10 of your runs side by side: the parameters and run settings that differ, and every metric each "
    "reported (its final value, its curve, its value at the epoch kept)", COMPARED,
    query={"runs": {**STR, "description": "the run ids, separated by commas (e.g. 4,7), or the field repeated"}},
    errors=(404,))})
def runs_compare(request):
    return JsonResponse(compare(request.user, request.GET.getlist("runs")))


# ---------------------------------------------------------------- the runs


def parameter_values(run: Run) -> dict:
    """The pipeline parameters' values the run was submitted with ({} before there were any)."""
    values = run.parameter_values or run.snapshot.get("parameter_values") or {}
    return values if isinstance(values, dict) else {}


def run_entry(run: Run) -> dict:
    try:
        trial = run.trial
    except ObjectDoesNotExist:
        trial = None
    return {"id": run.id, "name": run.name, "pipeline": run.pipeline_id, "status": run.status,
            "shown_status": st.shown_run_status(run.status, trial.status if trial else None),
            "submitted_at": run.submitted_at.isoformat(), "parameters": parameter_values(run),
            "trial": {"sweep": trial.sweep_id, "number": trial.number} if trial else None}


# ---------------------------------------------------------------- what differs


def _same_key(value):
    """Equality as a user reads it: 2 and 2.0 are the same, True and 1 are not."""
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, (int, float)):
        return ("number", float(value))
    return ("json", json.dumps(value, sort_keys=True))


def _nodes_by_key(run: Run) -> dict:
    return {(n.get("id"), n.get("kind")): n for n in run.snapshot.get("nodes", []) if isinstance(n, dict)}


def differences(runs: list[Run], catalogue) -> list[dict]:
    """Rows {key, label, values (one per run, None where the run has no such thing)} of every
    pipeline parameter value, module parameter (defaults filled in) and run setting, kept only
    where the runs differ."""
    rows = _parameter_rows(runs) + _node_rows(runs, catalogue)
    return [r for r in rows if len({_same_key(v) for v in r["values"]}) > 1]


def _parameter_rows(runs: list[Run]) -> list[dict]:
    values = [parameter_values(r) for r in runs]
    names = list(dict.fromkeys(name for v in values for name in v))
    return [{"key": f"parameter:{name}", "label": f"Pipeline parameter {name}", "values": [v.get(name) for v in values]}
            for name in names]


def node_titles(runs: list[Run], catalogue) -> dict[str, str]:
    """{node id: how a row names it}: its module's label, as on the canvas, with the id only where
    two nodes of these runs share that label ("Toy add (add2)"); the kind where none is installed."""
    nodes = {k: n for r in runs for k, n in _nodes_by_key(r).items()}
    names = node_names({"nodes": list(nodes.values())}, catalogue)
    return {nid: names.get(nid) or kind or nid for nid, kind in nodes}


def _node_rows(runs: list[Run], catalogue) -> list[dict]:
    per_run = [_nodes_by_key(r) for r in runs]
    keys = list(dict.fromkeys(k for nodes in per_run for k in nodes))
    titles = node_titles(runs, catalogue)
    rows = []
    for nid, kind in keys:
        nodes = [nodes.get((nid, kind)) for nodes in per_run]
        rows += _module_rows(nid, kind, nodes, catalogue.get(kind), titles[nid])
    return rows


def _module_rows(nid: str, kind: str, nodes: list, module, title: str) -> list[dict]:
    """One node's parameters and run settings, one row each (values None where a run lacks the node)."""
    given = [(n.get("parameters") or {}) if n is not None else None for n in nodes]
    declared = [p.name for p in module.params] if module else []
    names = list(dict.fromkeys(declared + [name for g in given if g for name in g]))
    rows = []
    for name in names:
        param = module.param(name) if module else None
        default = param.default if param else None
        rows.append({"key": f"node:{nid}:{kind}:{name}", "label": f"{title}: {param.label if param else name}",
                     "values": [None if g is None else g.get(name, default) for g in given]})
    settings = [(n.get("run_settings") or {}) if n is not None else None for n in nodes]
    if (module and module.distributed) or any(settings):
        for name, label in graph.RUN_SETTING_LABELS.items():
            rows.append({"key": f"node:{nid}:{kind}:run_settings.{name}", "label": f"{title}: {label}",
                         "values": [None if s is None else s.get(name, "" if name == targets.KEY else 1) for s in settings]})
    return rows


# ---------------------------------------------------------------- metrics


def metrics(runs: list[Run], catalogue) -> list[dict]:
    """Every metric a node of these runs reported, matched by node id, kind and metric name:
    {node, label, name, goal, final (the last value, per run), curves ([[step, value], ...] per run),
    kept_step and kept (per run: the epoch whose model the node kept, and the value there, or None)}.
    A reused node's metrics are those of the run that computed its outputs. A value reported
    without a step is placed at the next step of its curve."""
    index = {r.id: i for i, r in enumerate(runs)}
    kinds = [{nid: kind for nid, kind in _nodes_by_key(r)} for r in runs]
    order = list(dict.fromkeys(nid for r in runs for nid, _ in _nodes_by_key(r)))
    reused = _reused_sources(index)
    rows: dict[tuple, dict] = {}
    titles = node_titles(runs, catalogue)
    stored = (Event.objects.filter(run_id__in={*index, *(run_id for run_id, _ in reused)}, type="metric")
              .order_by("id").values_list("run_id", "node_id", "data"))
    for run_id, node_id, data in stored.iterator():
        name, value = (data.get("name"), data.get("value")) if isinstance(data, dict) else (None, None)
        if not isinstance(name, str) or not _is_number(value):
            continue
        targets = ([(index[run_id], node_id)] if run_id in index else []) + reused.get((run_id, node_id), [])
        for i, nid in targets:
            kind = kinds[i].get(nid, "")
            row = rows.get((nid, kind, name)) or rows.setdefault((nid, kind, name), _metric_row(nid, kind, name, len(runs), catalogue, titles))
            curve = row["curves"][i]
            step = data.get("step")
            curve.append([step if _is_number(step) else len(curve) + 1, value])
            row["final"][i] = value
    _add_kept(rows.values(), runs)
    position = {nid: n for n, nid in enumerate(order)}
    return sorted(rows.values(), key=lambda r: position.get(r["node"], len(position)))


def _add_kept(rows, runs: list[Run]) -> None:
    """Each row's value at the epoch whose model its node kept (what a sweep scores a trial by, and
    what registering the run's model gives), where the node's outputs name one."""
    wanted = {r["node"] for r in rows}
    outputs = {(run_id, nid): out for run_id, nid, out in
               NodeRun.objects.filter(run__in=runs, node_id__in=wanted).values_list("run_id", "node_id", "outputs")}
    kept: dict[tuple[int, str], int | None] = {}
    for row in rows:
        for i, run in enumerate(runs):
            key = (run.id, row["node"])
            if key not in kept:
                kept[key] = artifacts.kept_epoch(outputs.get(key))
            at = {step: value for step, value in row["curves"][i]}.get(kept[key])
            row["kept_step"][i], row["kept"][i] = (kept[key], at) if at is not None else (None, None)


def _reused_sources(index: dict[int, int]) -> dict[tuple[int, str], list[tuple[int, str]]]:
    """{(run, node) that computed an output: [(index of a compared run, its node) that reused it]}."""
    sources: dict[tuple[int, str], list[tuple[int, str]]] = {}
    reused = NodeRun.objects.filter(run_id__in=index, status=st.REUSED, reused_from__isnull=False)
    for run_id, node_id, src_run, src_node in reused.values_list("run_id", "node_id", "reused_from__run_id", "reused_from__node_id"):
        sources.setdefault((src_run, src_node), []).append((index[run_id], node_id))
    return sources


def _metric_row(node_id: str, kind: str, name: str, n: int, catalogue, titles: dict | None = None) -> dict:
    module = catalogue.get(kind)
    return {"node": node_id, "kind": kind, "label": f"{(titles or {}).get(node_id) or (module.label if module else kind) or 'node'}: {name}",
            "name": name, "step": module.metric_step if module else "step",  # what a curve's x counts ("epoch")
            "goal": goal_of(name), "final": [None] * n, "curves": [[] for _ in range(n)],
            "kept_step": [None] * n, "kept": [None] * n}
