"""The sweeps' JSON API (the sweep dialog, the sweep page, scripts). Owner only: anyone else's
sweep answers 404.

    GET     /api/sweeps                     the user's sweeps (200 most recent), without their trials
    POST    /api/sweeps {pipeline, config}  201 a sweep of a saved pipeline, its first trials started
    GET     /api/sweeps/<id>                one sweep with its trials
    DELETE  /api/sweeps/<id>                a finished sweep deleted (its runs stay); 409 while it runs
    POST    /api/sweeps/<id>/cancel         every trial stopped, and the sweep
    POST    /api/sweeps/<id>/apply-best     the best trial's values become the pipeline's defaults"""
from __future__ import annotations

from django.http import JsonResponse
from django.shortcuts import get_object_or_404

from designer.engine import statuses as st
from designer.engine import sweep_schema, tuning
from designer.pipelines.authoring import drafts
from designer.pipelines.models import Sweep
from designer.pipelines.openapi import BOOL, INT, NUM, STR, TIME, Op, arr, maybe, named, obj, schema_view
from designer.pipelines.runs import labels
from designer.pipelines.runs.api import pipeline_json
from designer.pipelines.runs.schemas import LABELS, PIPELINE, SOURCE, TAGS
from designer.pipelines.sweeps import service as sweeps
from designer.pipelines.web import BadRequest, api, body_json

# a configuration as a person writes it and as a sweep keeps it (its canonical form is one of them): the
# schema the page and editors read (designer/engine/sweep_schema.py)
CONFIG = named("SweepConfig", {k: v for k, v in sweep_schema.schema().items() if k not in ("$schema", "$id")})
TRIAL = named("SweepTrial", obj({
    "number": INT, "run": maybe(INT), "values": obj(), "status": STR, "value": maybe(NUM), "peak": maybe(NUM),
    "kept_step": maybe(INT), "epochs": INT, "error": STR, "started_at": maybe(TIME), "finished_at": maybe(TIME),
    "duration": maybe(NUM), "best": BOOL, "curve": arr(arr(NUM)), "stopped_at_step": maybe(INT), "detail": STR,
    "reused_from_run": maybe(INT)}))
_SWEEP = {"id": INT, "name": STR, "pipeline": maybe(INT), "status": STR, "message": STR, "config": CONFIG,
          "primary_metric": obj({"name": STR, "goal": STR}), "swept": arr(STR), "base_values": obj(),
          "submitted_at": TIME, "started_at": maybe(TIME), "finished_at": maybe(TIME), "duration": maybe(NUM),
          "best_trial": maybe(INT), "experiment": STR, "tags": TAGS, "source": SOURCE}
SWEEP = named("Sweep", obj({**_SWEEP, "trials": arr(TRIAL)}))
SWEEP_SUMMARY = named("SweepSummary", obj({**_SWEEP, "trial_count": INT}))
NEW_SWEEP = obj({"pipeline": INT}, {"name": maybe(LABELS["name"]), "experiment": maybe(LABELS["experiment"]), "tags": maybe(LABELS["tags"]),
                                    "parameters": maybe(obj()), "config": {"anyOf": [CONFIG, STR]}, "config_yaml": maybe(STR)})


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
         "duration": (sweep.finished_at - sweep.started_at).total_seconds() if sweep.finished_at and sweep.started_at else None,
         "experiment": sweep.experiment, "tags": sweep.tags, "source": sweep.source}
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


@api("GET", "POST", doc={
    "GET": Op("Your sweeps, newest first (the 200 most recent), each with its trial count but not its trials",
              obj({"sweeps": arr(SWEEP_SUMMARY)})),
    "POST": Op("Start a sweep of one of your saved pipelines: its configuration (HyperDrive's shape) as `config`, an "
               "object or YAML text, or as `config_yaml`; `parameters`: values of the pipeline parameters not swept; "
               "optionally a `name`, an `experiment` and `tags` (its trials take the last two)",
               SWEEP, status=201, body=NEW_SWEEP, errors=(404,))})
def sweep_list(request):
    if request.method == "GET":
        return JsonResponse({"sweeps": [sweep_json(s, False) for s in Sweep.objects.filter(owner=request.user)[:200]]})
    data = body_json(request)
    if "pipeline" not in data:
        raise BadRequest("say which pipeline to sweep: `pipeline` (its id) is required")
    if not isinstance(data["pipeline"], int) or isinstance(data["pipeline"], bool):
        raise BadRequest(f"`pipeline` is a pipeline's id (a whole number), got {data['pipeline']!r}")
    given = labels.from_body(data)  # its name, experiment and tags (its trials take the last two)
    pipeline = drafts.owned(request.user, data["pipeline"])
    raw = data.get("config_yaml") if data.get("config_yaml") is not None else data.get("config")
    if raw is None:
        raise BadRequest("give the sweep configuration: `config` (an object) or `config_yaml` (text)")
    values = data.get("parameters") or {}
    if not isinstance(values, dict):
        raise BadRequest(f"`parameters` is an object of pipeline parameter values, got {values!r}")
    try:
        sweep = sweeps.start(request.user, pipeline.draft, raw, pipeline=pipeline, values=values, labels=given,
                             source=labels.source_of(request))
    except sweeps.SweepInvalid as e:
        raise BadRequest(str(e), e.problems)
    return JsonResponse(sweep_json(sweep), status=201)


@api("GET", "DELETE", doc={
    "GET": Op("One of your sweeps, with its trials, their values, scores and curves", SWEEP),
    "DELETE": Op("Delete a finished sweep and its trials (their runs stay); a sweep still running must be cancelled first",
                 obj({"deleted": INT}), errors=(409,))})
def sweep_detail(request, pk):
    sweep = _own(request, pk)
    if request.method == "DELETE":
        if not sweep.finished:
            raise BadRequest(f"the sweep {sweep.name!r} is {sweep.status}: cancel it first, then delete it", status=409)
        sweep.delete()  # its trials and, once committed, its Optuna study (sweeps.on_sweep_deleted); runs stay
        return JsonResponse({"deleted": pk})
    return JsonResponse(sweep_json(sweep))  # reading only: deadlines are the maintenance loop's


@api("POST", doc={"POST": Op("Cancel a sweep: stop every trial still running, then the sweep (a finished sweep is "
                              "answered as it is)", SWEEP)})
def sweep_cancel(request, pk):
    sweep = _own(request, pk)
    if not sweep.finished:
        sweeps.cancel(sweep)
        sweep.refresh_from_db()
    return JsonResponse(sweep_json(sweep))


@api("POST", doc={"POST": Op("Make the values of the sweep's best trial (so far) the defaults of its pipeline's "
                              "parameters, as a new revision", obj({"pipeline": PIPELINE}), errors=(400,))})
def sweep_apply_best(request, pk):
    sweep = _own(request, pk)
    return JsonResponse({"pipeline": pipeline_json(sweeps.apply_best(sweep))})


sweep_config_schema = schema_view("The JSON Schema of a sweep configuration (YAML or JSON): what the sweep form and "
                                  "an editor's YAML support read; the server checks the same shape and more",
                                  sweep_schema.schema)
