"""The sweeps' JSON API (the sweep dialog, the sweep page, scripts). Owner only: anyone else's
sweep answers 404."""
from __future__ import annotations

from django.http import JsonResponse
from django.shortcuts import get_object_or_404

from designer.engine import statuses as st
from designer.engine import tuning
from designer.pipelines.authoring import drafts
from designer.pipelines.models import Sweep
from designer.pipelines.runs.api import pipeline_json
from designer.pipelines.sweeps import service as sweeps
from designer.pipelines.web import BadRequest, api, body_json


def _iso(at):
    return at and at.isoformat()


def trial_json(trial, metric: str, goal: str, best_id) -> dict:
    status = trial.status
    if not trial.finished and trial.run is not None and trial.run.status == st.RUNNING:
        status = st.RUNNING
    curve = sweeps.primary_curve(trial.run, metric)
    peak = tuning.best_value([v for _, v in curve], goal)
    return {"number": trial.number, "run": trial.run_id, "values": trial.values, "status": status,
            "value": trial.value if trial.finished else peak, "peak": peak, "kept_step": trial.kept_step,
            "epochs": trial.epochs if trial.finished else len(curve), "error": trial.error,
            "started_at": _iso(trial.started_at), "finished_at": _iso(trial.finished_at), "duration": trial.duration,
            "best": trial.pk == best_id, "curve": [[s, v] for s, v in curve],
            "stopped_at_step": trial.stopped_at_step, "detail": trial.detail,
            "reused_from_run": sweeps.reused_from(trial.run, metric)}


def sweep_json(sweep: Sweep, with_trials: bool = True) -> dict:
    config = sweep.config
    d = {"id": sweep.pk, "name": sweep.name, "pipeline": sweep.pipeline_id, "status": sweep.status,
         "message": sweep.message, "config": config,
         "primary_metric": {"name": config["primary_metric_name"], "goal": config["primary_metric_goal"]},
         "swept": [e["name"] for e in config["parameter_space"]], "base_values": sweep.base_values,
         "submitted_at": _iso(sweep.submitted_at), "started_at": _iso(sweep.started_at),
         "finished_at": _iso(sweep.finished_at),
         "duration": (sweep.finished_at - sweep.started_at).total_seconds() if sweep.finished_at and sweep.started_at else None}
    trials = list(sweep.trials.select_related("run")) if with_trials or not sweep.finished else []
    best = sweeps.best_trial(sweep, trials)  # while it runs, its best so far: marked, and applicable
    d["best_trial"] = best.number if best else None
    if with_trials:
        d["trials"] = [trial_json(t, config["primary_metric_name"], config["primary_metric_goal"], best and best.pk) for t in trials]
    else:
        d["trial_count"] = sweep.trials.count()
    return d


def _own(request, pk) -> Sweep:
    return get_object_or_404(Sweep.objects.select_related("best_trial"), pk=pk, owner=request.user)


@api("GET", "POST")
def sweep_list(request):
    if request.method == "GET":
        return JsonResponse({"sweeps": [sweep_json(s, False) for s in Sweep.objects.filter(owner=request.user)[:200]]})
    data = body_json(request)
    if "pipeline" not in data:
        raise BadRequest("say which pipeline to sweep: `pipeline` (its id) is required")
    if not isinstance(data["pipeline"], int) or isinstance(data["pipeline"], bool):
        raise BadRequest(f"`pipeline` is a pipeline's id (a whole number), got {data['pipeline']!r}")
    if data.get("name") is not None and not isinstance(data["name"], str):
        raise BadRequest(f"`name` is text, got {data['name']!r}")
    pipeline = drafts.owned(request.user, data["pipeline"])
    raw = data.get("config_yaml") if data.get("config_yaml") is not None else data.get("config")
    if raw is None:
        raise BadRequest("give the sweep configuration: `config` (an object) or `config_yaml` (text)")
    values = data.get("parameters") or {}
    if not isinstance(values, dict):
        raise BadRequest(f"`parameters` is an object of pipeline parameter values, got {values!r}")
    try:
        sweep = sweeps.start(request.user, pipeline.draft, raw, pipeline=pipeline, name=data.get("name"), values=values)
    except sweeps.SweepInvalid as e:
        raise BadRequest(str(e), e.problems)
    return JsonResponse(sweep_json(sweep), status=201)


@api("GET", "DELETE")
def sweep_detail(request, pk):
    sweep = _own(request, pk)
    if request.method == "DELETE":
        if not sweep.finished:
            raise BadRequest(f"the sweep {sweep.name!r} is {sweep.status}: cancel it first, then delete it", status=409)
        sweep.delete()  # its trials and, once committed, its Optuna study (sweeps.on_sweep_deleted); runs stay
        return JsonResponse({"deleted": pk})
    return JsonResponse(sweep_json(sweep))  # reading only: deadlines are the maintenance loop's


@api("POST")
def sweep_cancel(request, pk):
    sweep = _own(request, pk)
    if not sweep.finished:
        sweeps.cancel(sweep)
        sweep.refresh_from_db()
    return JsonResponse(sweep_json(sweep))


@api("POST")
def sweep_apply_best(request, pk):
    sweep = _own(request, pk)
    return JsonResponse({"pipeline": pipeline_json(sweeps.apply_best(sweep))})
