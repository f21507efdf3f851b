"""Sweeps: trials of a pipeline with sampled parameter values, as HyperDrive runs them.

Nothing loops in a process of its own: a sweep moves on events. `start()` stores it and starts its
first trials; each time a trial's run finishes (signals.run_finished), its primary metric is told
to the Optuna study and `fill()` starts trials until `max_concurrent_runs` run at once, or ends
the sweep at `max_total_runs`, the grid's end, `max_duration_minutes` or a cancel. The maintenance loop
(maintenance.py) calls `tick()`, which enforces the deadline and moves on a sweep whose event was lost.

A trial is an ordinary run: the nodes that no swept parameter reaches have the same cache key in
every trial and are computed once (advance.py reuses them, or waits for the trial computing
them). The early-termination policy acts in the worker that runs a trial's training (policy.py).
A swept script argument (HyperDrive's `name: --learning_rate`) drives the pipeline parameter that
sweep_arguments binds to the nodes passing it; the trials keep the argument's name.
"""
from __future__ import annotations

import logging
import uuid
from datetime import timedelta

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from designer.engine import graph, parameters, sweep_arguments, sweep_config, sweep_text, trial_outcome, tuning
from designer.engine import statuses as st
from designer.pipelines.authoring import drafts
from designer.pipelines.catalogue.service import get_catalogue
from designer.pipelines.compute import workers
from designer.pipelines.models import Event, NodeRun, Pipeline, Run, Source, Sweep, Trial
from designer.pipelines.runs import artifacts, events
from designer.pipelines.runs import service as runs
from designer.pipelines.runs.labels import Labels
from designer.pipelines.sweeps import studies

log = logging.getLogger(__name__)
RUN_TO_TRIAL = {st.COMPLETED: st.COMPLETED, st.FAILED: st.FAILED, st.CANCELLED: st.CANCELLED}


class SweepInvalid(ValueError):
    """A sweep that cannot start: `problems` names each problem (graph.Problem)."""

    def __init__(self, message: str, problems: list):
        super().__init__(message)
        self.problems = problems


# ---------------------------------------------------------------- starting


def check(owner, doc: dict, raw_config, values: dict | None = None) -> tuple[dict, sweep_config.SweepConfig]:
    """The pipeline (checked, migrated, its components pinned) and its sweep configuration;
    SweepInvalid names every problem."""
    catalogue = get_catalogue(owner)
    try:
        doc = graph.check(graph.pin_versions(graph.upgrade(doc), catalogue), catalogue, workers.machines(), workers.targets())
    except graph.PipelineInvalid as e:
        raise SweepInvalid(f"the pipeline cannot run: {len(e.problems)} problem(s)", e.problems)
    text = isinstance(raw_config, (str, bytes))
    try:
        raw = sweep_text.parse_text(raw_config) if text else raw_config
        bound = sweep_arguments.bind(doc, raw, catalogue, sweep_text.entry_lines(raw_config) if text else None)
        try:  # a script argument swept (`--learning_rate`) is checked as the pipeline parameter it drives
            config = sweep_config.check(raw, bound.declarations(), parameters.metrics(doc, catalogue))
        except sweep_config.SweepConfigInvalid as e:
            raise sweep_config.SweepConfigInvalid(bound.merged(e.problems)) from None
        if bound.problems:
            raise sweep_config.SweepConfigInvalid(bound.problems)
    except sweep_config.SweepConfigInvalid as e:
        raise SweepInvalid(f"the sweep configuration has {len(e.problems)} problem(s)", e.problems)
    doc = bound.doc
    swept = {e.name for e in config.parameter_space}
    base = {k: v for k, v in (values or {}).items() if k not in swept}
    try:
        parameters.resolve(doc, base, catalogue)  # the values not swept: checked once, here
    except graph.PipelineInvalid as e:
        raise SweepInvalid(f"the parameter values cannot be used: {len(e.problems)} problem(s)", e.problems)
    return doc, config


def on_sweep_deleted(sender, instance: Sweep, **kwargs) -> None:
    """A deleted sweep (with its owner, in the admin) takes its Optuna study with it, once the
    deletion is committed (post_delete of Sweep, connected in apps.py)."""
    name = instance.study_name
    transaction.on_commit(lambda: studies.delete(name))


def start(owner, doc: dict, raw_config, pipeline: Pipeline | None = None, name: str | None = None,
          values: dict | None = None, labels: Labels | None = None, source: str = Source.UNKNOWN) -> Sweep:
    """Store a sweep and start its first trials. Raises SweepInvalid. `labels`: its experiment and
    tags (its trials take them); `source`: where it was submitted from (the page, the API)."""
    doc, config = check(owner, doc, raw_config, values)
    swept = {e.name for e in config.parameter_space}
    deadline = (timezone.now() + timedelta(minutes=config.max_duration_minutes)) if config.max_duration_minutes else None
    study_name = f"designer-sweep-{uuid.uuid4().hex}"
    studies.create(study_name, config)  # before the sweep is visible: a worker's tick() may load it at once
    labels = labels or Labels()
    default = (pipeline.name if pipeline else doc.get("name")) or "sweep"
    sweep = Sweep.objects.create(
        owner=owner, pipeline=pipeline, name=(labels.name or name or default)[:200], experiment=(labels.experiment or default)[:200],
        tags=labels.tags, source=source, snapshot=doc, config=config.as_dict(), base_values={k: v for k, v in (values or {}).items() if k not in swept},
        study_name=study_name, deadline=deadline)
    fill(sweep.pk)
    sweep.refresh_from_db()
    return sweep


# ---------------------------------------------------------------- moving on


def fill(sweep_id: int) -> None:
    """Start trials up to the limits, or end the sweep when nothing is left to run."""
    with transaction.atomic():
        sweep = Sweep.objects.select_for_update().filter(pk=sweep_id).first()
        if sweep is None or sweep.finished:
            return
        config = sweep_config.SweepConfig.from_dict(sweep.config)
        trials = list(sweep.trials.all())
        active = [t for t in trials if not t.finished]
        reason = _end_reason(sweep, config, trials)
        if reason is None:
            try:
                study = studies.load(sweep, config)
            except KeyError:  # its study was removed from the database: nothing can be sampled
                _finish(sweep, config, trials, "its Optuna study is missing from the database")
                return
            while len(active) < config.max_concurrent_runs and len(trials) < config.max_total_runs \
                    and not tuning.exhausted(study, config):
                try:
                    trial = _start_trial(sweep, study, config)
                except ValueError:  # another process asked for the last trial first
                    break
                trials.append(trial)
                if not trial.finished:
                    active.append(trial)
            reason = _end_reason(sweep, config, trials) or ("the grid is exhausted" if tuning.exhausted(study, config) else None)
        if not active and reason:
            _finish(sweep, config, trials, reason)
        elif sweep.status == st.QUEUED:
            Sweep.objects.filter(pk=sweep.pk).update(status=st.RUNNING, started_at=timezone.now())


def _end_reason(sweep: Sweep, config, trials: list[Trial]) -> str | None:
    if sweep.cancel_requested:
        return "cancelled by the user"
    if sweep.deadline and timezone.now() >= sweep.deadline:
        return f"its time ran out (max_duration_minutes: {config.max_duration_minutes:g})"
    if len(trials) >= config.max_total_runs:
        return f"all {config.max_total_runs} trials ran (max_total_runs)"
    return None


def _start_trial(sweep: Sweep, study, config) -> Trial:
    catalogue = get_catalogue(sweep.owner) if sweep_arguments.named(sweep.config) else None
    bound = sweep_arguments.bind(sweep.snapshot, sweep.config, catalogue)  # a script argument swept: its parameter
    declared = bound.declarations()
    types = {p["name"]: p["type"] for p in declared}
    ranges = {p["name"]: (p.get("min"), p.get("max")) for p in declared if p.get("min") is not None or p.get("max") is not None}
    asked = tuning.ask(study, config, types, ranges)
    trial = Trial.objects.create(sweep=sweep, number=asked.number, optuna_trial_id=asked.trial_id,
                                 values=asked.values, started_at=timezone.now())
    try:
        runs.submit(sweep.owner, sweep.snapshot, pipeline=sweep.pipeline, name=f"{sweep.name} · trial {asked.number}",
                    values=bound.values({**sweep.base_values, **asked.values}), trial=trial, source=Source.SWEEP,
                    labels=Labels(experiment=sweep.experiment or None, tags=sweep.tags))
    except graph.PipelineInvalid as e:  # a sampled value no module accepts (normal() can go below 0)
        _end_trial(trial, st.FAILED, None, 0, "; ".join(str(p) for p in e.problems), study)
    return trial


def on_run_finished(sender=None, run_id: int | None = None, **kwargs) -> None:
    """signals.run_finished: never lets the node that finished the run fail (tick() retries)."""
    try:
        trial_finished(run_id)
    except Exception as e:  # the database or the study away for a moment: the maintenance loop's tick() retries
        log.warning("sweep: the end of run %s could not be recorded yet: %s", run_id, e)


def trial_finished(run_id: int) -> None:
    """A trial's run is over: record its outcome, tell the study, move the sweep on."""
    trial = Trial.objects.filter(run_id=run_id).select_related("sweep", "run").first()
    if trial is None or trial.finished:
        return
    config = sweep_config.SweepConfig.from_dict(trial.sweep.config)
    curve = primary_curve(trial.run, config.primary_metric_name)
    value = tuning.best_value([v for _, v in curve], config.primary_metric_goal)
    kept = kept_step(trial.run, config.primary_metric_name)
    if kept in dict(curve):  # the model it hands on is that epoch's: its score is that epoch's too
        value = dict(curve)[kept]
    else:
        kept = None
    status, detail = RUN_TO_TRIAL.get(trial.run.status, st.FAILED), ""
    if status == st.COMPLETED and trial.stop_requested:
        planned = _planned_steps(trial.run, config.primary_metric_name)  # none for azureml or MLflow logging
        status, detail = trial_outcome.label(trial.stopped_at_step, curve, planned, _stop_event(trial.run))
    error = "" if status != st.FAILED else _run_error(trial.run)
    if status == st.COMPLETED and value is None:
        status, error = st.FAILED, (f"the run completed but no module reported the primary metric "
                                    f"{config.primary_metric_name!r}")
    _end_trial(trial, status, value, len(curve), error, studies.load(trial.sweep, config), kept, detail)
    fill(trial.sweep_id)


def _end_trial(trial: Trial, status: str, value, epochs: int, error: str, study, kept: int | None = None,
               detail: str = "") -> None:
    won = Trial.objects.filter(pk=trial.pk).exclude(status__in=st.TRIAL_FINISHED).update(
        status=status, value=value, epochs=epochs, error=error, finished_at=timezone.now(), kept_step=kept, detail=detail)
    if won:
        trial.status, trial.value = status, value
        tuning.tell(study, trial.number, status, value)
        _nudge(trial.sweep_id)


def _run_error(run: Run) -> str:
    failed = run.nodes.filter(status=st.FAILED).first()
    return f"{failed.node_id} ({failed.kind}): {failed.error.splitlines()[-1] if failed.error else 'failed'}" if failed else ""


def best_of(trials, goal: str) -> Trial | None:
    """The trial with the best primary metric among those that ended with one (completed or early
    terminated): the sweep's best when it ends, its best so far while it runs."""
    scored = [t for t in trials if t.value is not None and t.status in (st.COMPLETED, st.EARLY_TERMINATED)]
    sign = 1 if goal == "maximize" else -1
    return max(scored, key=lambda t: sign * t.value, default=None)


def best_trial(sweep: Sweep, trials=None) -> Trial | None:
    """The sweep's best trial: the one it named when it ended, else the best so far (of `trials`
    when the caller has read them)."""
    if sweep.finished:
        return sweep.best_trial
    return best_of(sweep.trials.all() if trials is None else trials, sweep.config["primary_metric_goal"])


def _finish(sweep: Sweep, config, trials: list[Trial], reason: str) -> None:
    best = best_of(trials, config.primary_metric_goal)
    if sweep.cancel_requested:
        status = st.CANCELLED
    else:
        status = st.COMPLETED if best is not None else st.FAILED
    if best is not None:
        values = ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in best.values.items())
        kept = f" at epoch {best.kept_step}, the model it kept" if best.kept_step else ""
        message = f"{reason}; best trial {best.number}: {config.primary_metric_name} {best.value:.4g}{kept} ({values})"
    else:
        failed = sum(t.status == st.FAILED for t in trials)
        if not trials:
            message = reason
        elif failed == len(trials):
            message = f"{reason}; every trial failed"
        elif any(t.value is not None for t in trials):
            message = f"{reason}; no trial completed"
        else:
            message = f"{reason}; no trial reported {config.primary_metric_name}"
    Sweep.objects.filter(pk=sweep.pk).update(status=status, message=message, best_trial=best, finished_at=timezone.now(),
                                             started_at=sweep.started_at or timezone.now())
    _nudge(sweep.pk)


# ---------------------------------------------------------------- cancel, deadline, apply


def cancel(sweep: Sweep) -> None:
    """Stop every trial (their processes end) and the sweep."""
    Sweep.objects.filter(pk=sweep.pk).update(cancel_requested=True)
    for trial in sweep.trials.select_related("run").exclude(status__in=st.TRIAL_FINISHED):
        if trial.run is not None and not trial.run.finished:
            runs.cancel(trial.run)
    fill(sweep.pk)


def tick() -> None:
    """The maintenance loop's: end sweeps past their deadline; move on those whose event was lost."""
    for sweep in Sweep.objects.filter(status__in=(st.QUEUED, st.RUNNING)):
        tick_one(sweep)


def tick_one(sweep: Sweep) -> None:
    if sweep.deadline and timezone.now() >= sweep.deadline:
        for trial in sweep.trials.select_related("run").exclude(status__in=st.TRIAL_FINISHED):
            if trial.run is not None and not trial.run.finished:
                runs.cancel(trial.run)
    for trial in sweep.trials.filter(run__status__in=st.RUN_FINISHED).exclude(status__in=st.TRIAL_FINISHED):
        on_run_finished(run_id=trial.run_id)
    fill(sweep.pk)


def apply_best(sweep: Sweep) -> Pipeline:
    """The best trial's values (swept, and the others it ran with) become the defaults of the
    pipeline's parameters (a new revision), a script argument's the value of the nodes' parameter
    it passes: a plain Submit then runs the best trial again."""
    if sweep.pipeline is None:
        raise drafts.DraftError("this sweep's pipeline was deleted: there is nothing to apply its values to")
    best = best_trial(sweep)
    if best is None:
        raise drafts.DraftError("this sweep has no best trial (yet): no trial ended with its primary metric")
    p = sweep.pipeline
    draft = graph.upgrade(p.draft)
    # everything the best trial ran with; a script argument's value goes into the nodes passing it
    values = sweep_arguments.apply(draft, {**sweep.base_values, **best.values}, get_catalogue(sweep.owner))
    for declared in draft.get("parameters", []):
        if declared["name"] in values:
            declared["default"] = values[declared["name"]]
    Pipeline.objects.filter(pk=p.pk).update(draft=draft, revision=F("revision") + 1, updated_at=timezone.now())
    p.refresh_from_db()
    return p


# ---------------------------------------------------------------- reading


def primary_curve(run: Run | None, metric: str) -> list[tuple[int, float]]:
    """[(step, value)] of the run's primary metric, the last value of each step (a script may log
    a step's figure inside its validation loop and again after it: the last is its own); a figure
    without a step (stored before the relay numbered them) is numbered as it came. A reused
    training node's figures come from the run that computed it."""
    curve: dict[int, float] = {}
    for run_id, node_id in _metric_sources(run):
        rows = Event.objects.filter(run_id=run_id, type="metric", data__name=metric)
        if node_id is not None:
            rows = rows.filter(node_id=node_id)
        unnumbered = 0
        for data in rows.order_by("id").values_list("data", flat=True):
            step = data.get("step")
            if step is None:
                unnumbered += 1
                step = unnumbered
            curve[int(step)] = float(data["value"])
    return sorted(curve.items())


def _metric_sources(run: Run | None) -> list[tuple[int, str | None]]:
    """Where a run's metrics are: its own events (any node), and those of the runs its reused
    nodes come from (that node's)."""
    if run is None:
        return []
    sources = [(run.pk, None)]
    for nr in NodeRun.objects.filter(run=run, status=st.REUSED).select_related("reused_from"):
        if nr.reused_from is not None:
            sources.append((nr.reused_from.run_id, nr.reused_from.node_id))
    return sources


def reused_from(run: Run | None, metric: str) -> int | None:
    """The earlier run whose node that reports `metric` (its training) this run reused, doing no
    work of its own there: its figures and epochs are that run's. None when it trained itself."""
    for run_id, node_id in _metric_sources(run)[1:]:
        if Event.objects.filter(run_id=run_id, node_id=node_id, type="metric", data__name=metric).exists():
            return run_id
    return None


def kept_step(run: Run | None, metric: str) -> int | None:
    """The step (epoch) whose model the node that reported `metric` kept, when its outputs say so
    (Train PyTorch Model keeps the epoch of lowest validation loss, `best_epoch`, not its last)."""
    for run_id, node_id in _metric_sources(run):
        rows = Event.objects.filter(run_id=run_id, type="metric", data__name=metric)
        reporter = (rows.filter(node_id=node_id) if node_id else rows).values_list("node_id", flat=True).first()
        if reporter:
            nr = NodeRun.objects.filter(run_id=run_id, node_id=reporter).first()
            return artifacts.kept_epoch(nr.outputs) if nr is not None else None
    return None


def _planned_steps(run: Run, metric: str) -> int | None:
    """How many steps the module meant to run (its metric events say so), when it said."""
    data = (Event.objects.filter(run=run, type="metric", data__name=metric).order_by("-id")
            .values_list("data", flat=True).first())
    return (data or {}).get("steps")


def _stop_event(run: Run) -> dict | None:
    """How the trial's command stopped when its policy asked ({how, grace, after, seen}: the
    node's `stopped` event), or None when no command said (a module that reads ctx.stop_requested())."""
    return Event.objects.filter(run=run, type="stopped").order_by("-id").values_list("data", flat=True).first()


def _nudge(sweep_id: int) -> None:
    events.nudge_sweep(sweep_id)
