"""The Jobs page (/jobs/): every run and sweep of the user, over all pipelines, as Azure ML
studio's Jobs list: filters, sort, metric columns, pages of 50, and runs ticked to compare
(the comparison page, /runs/compare, shows their parameters and metrics side by side)."""
from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.views.decorators.http import require_GET

from designer.pipelines.jobs import query, service
from designer.pipelines.models import Source
from designer.pipelines.sweeps.compare import MAX_RUNS, MIN_RUNS

COLUMN_LABELS = {"name": "Name", "experiment": "Experiment", "user": "Submitted by", "source": "Source",
                 "status": "Status", "submitted": "Submitted", "duration": "Duration"}


def _headers(q: query.Query) -> list[dict]:
    """Each sortable column: its label, the sort a click asks for, and how the list is sorted by it now."""
    name, descending = q.sort_field
    headers = []
    for key, label in [*COLUMN_LABELS.items(), *((f"{query.METRIC_SORT}{m}", m) for m in q.columns)]:
        now = ("descending" if descending else "ascending") if key == name else "none"
        # a first click sorts dates, durations and metrics largest first, text from A
        first = "-" if key in ("submitted", "duration") or key.startswith(query.METRIC_SORT) else ""
        ask = (key if descending else f"-{key}") if key == name else f"{first}{key}"
        headers.append({"key": key, "label": label, "sort": ask, "aria": now, "metric": key.startswith(query.METRIC_SORT)})
    return headers


@login_required
@require_GET
def jobs(request):
    q = query.parse(request.GET)
    found, rows = service.page(request.user, q)
    for job in rows:
        job.shown = [(name, _number(job.metric(name))) for name in q.columns]
    kept = request.GET.copy()  # what a sort or page link keeps of the filters
    for name in ("page", "sort"):
        kept.pop(name, None)
    return render(request, "pipelines/jobs.html", {
        "q": q, "page": found, "jobs": rows, "headers": _headers(q), "keep": kept.urlencode(),
        "keep_sorted": _with(kept, "sort", q.sort), "experiments": service.experiments(request.user),
        "metric_names": service.metric_names(request.user, q.columns), "statuses": [(x, x.replace("_", " ")) for x in query.STATUSES],
        "sources": Source.choices, "ops": query.OPS, "min_compare": MIN_RUNS, "max_compare": MAX_RUNS,
    })


def _number(value) -> str:
    """A metric as the comparison page writes it: 4 significant digits ("0.3333", "0.009", "12.35")."""
    return "" if value is None else f"{value:.4g}"


def _with(params, name: str, value: str) -> str:
    params = params.copy()
    params[name] = value
    return params.urlencode()
