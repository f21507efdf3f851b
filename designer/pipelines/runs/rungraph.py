"""A run's DAG, parsed once per run and process: a snapshot never changes, and a 5,000-node
snapshot is megabytes of JSON (not something to read per finished node or per message)."""
from __future__ import annotations

import threading
from collections import OrderedDict

from designer.engine import scheduler as s
from designer.pipelines.models import Run

KEPT = 32  # runs whose DAG a process keeps

_graphs: OrderedDict[tuple, s.RunGraph] = OrderedDict()
_lock = threading.Lock()


def run_graph(run: Run) -> s.RunGraph:
    """The run's DAG, indexed (`run` may be loaded without its snapshot)."""
    key = (run.pk, run.submitted_at)
    with _lock:
        g = _graphs.get(key)
        if g is not None:
            _graphs.move_to_end(key)
            return g
    loaded = "snapshot" not in run.get_deferred_fields()  # no query when the caller has it
    g = s.RunGraph.of(run.snapshot if loaded else Run.objects.values_list("snapshot", flat=True).get(pk=run.pk))
    with _lock:
        _graphs[key] = g
        while len(_graphs) > KEPT:
            _graphs.popitem(last=False)
    return g
