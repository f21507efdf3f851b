"""What the Jobs page is asked for, read from its query string: the filters, the sort, the metric
columns and the page. A value that cannot be used is dropped and said in `problems` (the page
shows them above the list); it never fails the page."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from designer.engine import statuses as st
from designer.pipelines.models import Source
from designer.pipelines.runs import labels

PER_PAGE = 50
MAX_COLUMNS = 8
KINDS = ("run", "sweep")
STATUSES = tuple(dict.fromkeys((*st.RUN_STATUSES, st.EARLY_TERMINATED)))
SOURCES = tuple(v for v, _ in Source.choices)
# the sortable columns: the page's name -> the listed rows' field (jobs/service.py)
SORTS = {"name": "j_name", "experiment": "j_experiment", "user": "j_user", "source": "j_source", "status": "j_status",
         "submitted": "j_submitted", "duration": "j_duration"}
METRIC_SORT = "metric:"
OPS = {"ge": "at least", "le": "at most"}


@dataclass
class MetricFilter:
    name: str
    op: str  # "ge" or "le"
    value: float


@dataclass
class Query:
    kind: str = ""  # "", "run" or "sweep"
    text: str = ""  # in the name
    experiment: str = ""
    status: str = ""
    source: str = ""
    user: str = ""
    tag: str = ""  # "key" or "key=value"
    metric: MetricFilter | None = None
    sort: str = "-submitted"
    columns: list[str] = field(default_factory=list)  # metric names shown as columns
    page: int = 1
    problems: list[str] = field(default_factory=list)

    @property
    def tag_pair(self) -> tuple[str, str | None]:
        key, eq, value = self.tag.partition("=")
        return key.strip(), (value.strip() if eq else None)

    @property
    def sort_field(self) -> tuple[str, bool]:
        """(the column sorted by, descending)."""
        return self.sort.lstrip("-"), self.sort.startswith("-")


def _text(params, name: str, limit: int, problems: list[str]) -> str:
    value = params.get(name, "").strip()
    if len(value) > limit or any(ord(c) < 32 for c in value):
        problems.append(f"{name}: at most {limit} characters on one line; not applied")
        return ""
    return value


def _choice(params, name: str, allowed: tuple, problems: list[str]) -> str:
    value = params.get(name, "").strip()
    if value and value not in allowed:
        problems.append(f"{name}: {value[:40]!r} is none of {', '.join(allowed)}; not applied")
        return ""
    return value


def parse(params) -> Query:
    """A Query from a QueryDict (request.GET)."""
    q = Query()
    q.kind = _choice(params, "type", KINDS, q.problems)
    q.text = _text(params, "q", labels.MAX_NAME, q.problems)
    q.experiment = _text(params, "experiment", labels.MAX_EXPERIMENT, q.problems)
    q.status = _choice(params, "status", STATUSES, q.problems)
    q.source = _choice(params, "source", SOURCES, q.problems)
    q.user = _text(params, "user", 150, q.problems)
    q.tag = _text(params, "tag", labels.MAX_TAG_KEY + 1 + labels.MAX_TAG_VALUE, q.problems)
    q.metric = _metric(params, q.problems)
    q.columns = _columns(params, q.problems)
    q.sort = _sort(params.get("sort", "").strip(), q.problems)
    q.page = _page(params.get("page", ""), q.problems)
    return q


def _metric(params, problems: list[str]) -> MetricFilter | None:
    name, op, raw = params.get("metric", "").strip(), params.get("op", "ge"), params.get("value", "").strip()
    if not name and not raw:
        return None
    if not name or len(name) > labels.MAX_NAME or op not in OPS:
        problems.append("metric filter: choose a metric, at least or at most, and a number; not applied")
        return None
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        problems.append(f"metric filter: {raw[:40]!r} is not a number; not applied")
        return None
    return MetricFilter(name, op, value)


def _columns(params, problems: list[str]) -> list[str]:
    names = [c.strip() for c in params.getlist("columns") if c.strip() and len(c.strip()) <= labels.MAX_NAME]
    names = list(dict.fromkeys(names))
    if len(names) > MAX_COLUMNS:
        problems.append(f"columns: at most {MAX_COLUMNS} metric columns; the first {MAX_COLUMNS} are shown")
    return names[:MAX_COLUMNS]


def _sort(raw: str, problems: list[str]) -> str:
    if not raw:
        return "-submitted"
    name = raw.lstrip("-")
    if name in SORTS or (name.startswith(METRIC_SORT) and 0 < len(name) - len(METRIC_SORT) <= labels.MAX_NAME):
        return raw
    problems.append(f"sort: {raw[:40]!r} is not a column; sorted by date submitted")
    return "-submitted"


def _page(raw: str, problems: list[str]) -> int:
    if not raw:
        return 1
    if not raw.isdigit() or len(raw) > 9 or int(raw) < 1:
        problems.append(f"page: {raw[:20]!r} is not a page number; the first page is shown")
        return 1
    return int(raw)
