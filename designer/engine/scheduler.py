"""Which nodes of a run can start now, which will never run, and whether the run is over.

Pure functions of the pipeline and the nodes' statuses: the caller stores the decisions.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from designer.engine.graph import topological_order, upstream_of

PENDING = "pending"  # waiting for its inputs
QUEUED = "queued"  # handed to the workers
RUNNING = "running"
COMPLETED = "completed"
REUSED = "reused"
FAILED = "failed"
CANCELLED = "cancelled"
NOT_RUN = "not_run"

SUCCEEDED = {COMPLETED, REUSED}
TERMINAL = {COMPLETED, REUSED, FAILED, CANCELLED, NOT_RUN}
BLOCKING = {FAILED, CANCELLED, NOT_RUN}


@dataclass
class Plan:
    ready: list[str] = field(default_factory=list)
    not_run: list[str] = field(default_factory=list)
    finished: bool = False
    outcome: str | None = None  # completed / failed / cancelled, once finished


def plan(doc: dict, status: dict[str, str]) -> Plan:
    status = dict(status)
    up = upstream_of(doc)
    result = Plan()
    for node in topological_order(doc):  # in order, so that "not run" spreads in one pass
        if status[node] != PENDING:
            continue
        parents = [status[p] for p in up[node]]
        if any(s in BLOCKING for s in parents):
            status[node] = NOT_RUN
            result.not_run.append(node)
        elif all(s in SUCCEEDED for s in parents):
            result.ready.append(node)
    if all(s in TERMINAL for s in status.values()):
        result.finished = True
        if FAILED in status.values():
            result.outcome = FAILED
        elif CANCELLED in status.values():
            result.outcome = CANCELLED
        else:
            result.outcome = COMPLETED
    return result
