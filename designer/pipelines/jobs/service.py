"""The Jobs page's list: a user's runs and sweeps over every pipeline, filtered, sorted and cut into
pages of 50 in the database (one query for the page's rows, one for the count), so that it costs
about the same at 10 runs and at 10,000 (bench/jobs.py). Runs and sweeps are one list: the same
columns of both, put together with UNION ALL; a filter that only a run has (a metric) leaves the
sweeps out. A run's final metrics are a JSON field read in SQL (runs/final_metrics.py)."""
from __future__ import annotations

from dataclasses import dataclass, field

from django.core.paginator import Page, Paginator
from django.db.models import (
    CharField,
    DurationField,
    ExpressionWrapper,
    F,
    FloatField,
    IntegerField,
    JSONField,
    QuerySet,
    Value,
)
from django.db.models.fields.json import KeyTextTransform, KeyTransform
from django.db.models.functions import Cast

from designer.engine import statuses as st
from designer.pipelines.jobs.query import METRIC_SORT, PER_PAGE, SORTS, Query
from designer.pipelines.models import Run, Sweep

RECENT_FOR_COLUMNS = 200  # the metric names offered as columns: those of the latest runs that logged any
MAX_CHOICES = 500


def _metric_value(name: str, which: str = "last"):
    """A run's final metric `name` (its last value) as a number, in SQL; NULL where it has none."""
    return Cast(KeyTextTransform(which, KeyTransform(name, "metrics")), FloatField())


def _common(kind: str) -> dict:
    """The listed columns, named alike for runs and sweeps (a UNION takes them in this order)."""
    return {"j_kind": Value(kind, CharField()), "j_id": F("id"), "j_name": F("name"), "j_experiment": F("experiment"),
            "j_tags": F("tags"), "j_user": F("owner__username"), "j_source": F("source"), "j_status": F("status"),
            "j_submitted": F("submitted_at"), "j_started": F("started_at"), "j_finished": F("finished_at"),
            "j_duration": ExpressionWrapper(F("finished_at") - F("started_at"), output_field=DurationField())}


def _filtered(rows: QuerySet, q: Query) -> QuerySet:
    """The filters both runs and sweeps have."""
    if q.text:
        rows = rows.filter(name__icontains=q.text)
    if q.experiment:
        rows = rows.filter(experiment=q.experiment)
    if q.source:
        rows = rows.filter(source=q.source)
    if q.user:
        rows = rows.filter(owner__username=q.user)
    key, value = q.tag_pair
    if key and value is None:
        rows = rows.filter(tags__has_key=key)
    elif key:
        rows = rows.annotate(j_tag=KeyTransform(key, "tags")).filter(j_tag=value)
    return rows


def _runs(user, q: Query, sort_metric: str | None) -> QuerySet:
    rows = _filtered(Run.objects.filter(owner=user), q)
    if q.status == st.EARLY_TERMINATED:
        rows = rows.filter(status=st.COMPLETED, trial__status=st.EARLY_TERMINATED)
    elif q.status == st.COMPLETED:  # as the page writes it: a trial its policy stopped is "early terminated"
        rows = rows.filter(status=st.COMPLETED).exclude(trial__status=st.EARLY_TERMINATED)
    elif q.status:
        rows = rows.filter(status=q.status)
    if q.metric:
        rows = rows.annotate(j_filter=_metric_value(q.metric.name))
        rows = rows.filter(**{f"j_filter__{'gte' if q.metric.op == 'ge' else 'lte'}": q.metric.value})
    return rows.annotate(**_common("run"), j_metrics=F("metrics"), j_pipeline=F("pipeline_id"),
                         j_sweep=F("trial__sweep_id"), j_trial=F("trial__number"), j_trial_status=F("trial__status"),
                         j_sort=_metric_value(sort_metric) if sort_metric else Value(None, FloatField()))


def _sweeps(user, q: Query) -> QuerySet:
    rows = _filtered(Sweep.objects.filter(owner=user), q)
    if q.status:
        rows = rows.filter(status=q.status)
    return rows.annotate(**_common("sweep"), j_metrics=Value(None, JSONField()), j_pipeline=F("pipeline_id"),
                         j_sweep=F("id"), j_trial=Value(None, IntegerField()), j_trial_status=Value(None, CharField()),
                         j_sort=Value(None, FloatField()))


COLUMNS = (*_common("run"), "j_metrics", "j_pipeline", "j_sweep", "j_trial", "j_trial_status", "j_sort")


def rows(user, q: Query):
    """The matching rows (dicts of COLUMNS), sorted: a query, not yet run."""
    name, descending = q.sort_field
    sort_metric = name[len(METRIC_SORT):] if name.startswith(METRIC_SORT) else None
    parts = []
    if q.kind in ("", "run"):
        parts.append(_runs(user, q, sort_metric).order_by().values(*COLUMNS))
    # a sweep has no metric of its own, nor a status a trial's policy gives
    if q.kind in ("", "sweep") and not q.metric and q.status != st.EARLY_TERMINATED and q.source != "sweep":
        parts.append(_sweeps(user, q).order_by().values(*COLUMNS))
    listed = parts[0].union(*parts[1:], all=True) if len(parts) > 1 else parts[0]
    key = "j_sort" if sort_metric else SORTS[name]
    ordering = F(key).desc(nulls_last=True) if descending else F(key).asc(nulls_last=True)
    # ties (same name, same experiment...) newest first, and always in one order: a page never repeats a row
    return listed.order_by(ordering, F("j_submitted").desc(), F("j_kind").asc(), F("j_id").desc())


@dataclass
class Job:
    """One row of the page."""

    kind: str
    id: int
    name: str
    experiment: str
    tags: dict
    user: str
    source: str
    status: str
    submitted_at: object
    duration: float | None
    metrics: dict
    pipeline: int | None
    sweep: int | None
    trial: int | None
    shown: list = field(default_factory=list)  # [(metric, value)] of the columns asked for

    @property
    def label(self) -> str:
        return self.status.replace("_", " ")

    def metric(self, name: str):
        entry = (self.metrics or {}).get(name)
        return entry.get("last") if isinstance(entry, dict) else None


def _job(row: dict) -> Job:
    duration = row["j_duration"]
    if duration is not None and not hasattr(duration, "total_seconds"):  # a backend that answers microseconds
        duration = None
    return Job(kind=row["j_kind"], id=row["j_id"], name=row["j_name"], experiment=row["j_experiment"], tags=row["j_tags"] or {},
               user=row["j_user"], source=row["j_source"], status=st.shown_run_status(row["j_status"], row["j_trial_status"]),
               submitted_at=row["j_submitted"], duration=duration.total_seconds() if duration is not None else None,
               metrics=row["j_metrics"] or {}, pipeline=row["j_pipeline"], sweep=row["j_sweep"], trial=row["j_trial"])


def page(user, q: Query) -> tuple[Page, list[Job]]:
    """The page asked for (the last one when asked past the end) and its jobs."""
    found = Paginator(rows(user, q), PER_PAGE).get_page(q.page)
    return found, [_job(r) for r in found.object_list]


def experiments(user) -> list[str]:
    """The experiments of the user's runs and sweeps, by name (the filter's choices)."""
    names = set(Run.objects.filter(owner=user).order_by().values_list("experiment", flat=True).distinct()[:MAX_CHOICES])
    names |= set(Sweep.objects.filter(owner=user).order_by().values_list("experiment", flat=True).distinct()[:MAX_CHOICES])
    return sorted(n for n in names if n)


def metric_names(user, also: list[str]) -> list[str]:
    """The metric names offered as columns: those the user's latest runs logged, and `also`."""
    latest = Run.objects.filter(owner=user).exclude(metrics={}).values_list("metrics", flat=True)[:RECENT_FOR_COLUMNS]
    names = {name for metrics in latest if isinstance(metrics, dict) for name in metrics}
    return sorted(names | set(also))
