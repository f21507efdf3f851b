"""Which nodes of a run can start now, which will never run, and whether the run is over.

Pure functions of the pipeline and the nodes' statuses: the caller stores the decisions.
`plan()` looks at the whole pipeline (a run's start, a cancel); `next_steps()` only at what one
change can affect, so that the work per finished node does not grow with the pipeline.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from designer.engine import targets
from designer.engine.graph import topological_order, upstream_of
from designer.engine.statuses import (  # noqa: F401 - the scheduler's vocabulary, used as s.QUEUED...
    BLOCKING,
    CANCELLED,
    COMPLETED,
    FAILED,
    NOT_RUN,
    PENDING,
    QUEUED,
    REUSED,
    RUNNING,
    SUCCEEDED,
    TERMINAL,
)


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


@dataclass(frozen=True)
class RunGraph:
    """A pipeline's DAG, indexed once: a run's snapshot never changes, so callers may keep it."""

    nodes: dict[str, dict]
    inputs: dict[str, dict[str, tuple[str, str]]]  # node -> {input port: (upstream node, its output port)}
    parents: dict[str, tuple[str, ...]]
    children: dict[str, tuple[str, ...]]
    compute: dict[str, str] = field(default_factory=dict)  # node -> its compute target, where one is named

    @classmethod
    def of(cls, doc: dict) -> RunGraph:
        nodes = {n["id"]: n for n in doc["nodes"]}
        inputs: dict[str, dict[str, tuple[str, str]]] = {nid: {} for nid in nodes}
        parents: dict[str, dict[str, None]] = {nid: {} for nid in nodes}  # dicts: ordered sets
        children: dict[str, dict[str, None]] = {nid: {} for nid in nodes}
        for link in doc["links"]:
            src, dst = link["from"]["node"], link["to"]["node"]
            inputs[dst][link["to"]["port"]] = (src, link["from"]["port"])
            parents[dst][src] = None
            children[src][dst] = None
        compute = {nid: t for nid, n in nodes.items() if (t := targets.target_of(doc, n))}
        return cls(nodes, inputs, {k: tuple(v) for k, v in parents.items()}, {k: tuple(v) for k, v in children.items()}, compute)

    def affected_by(self, changed: Iterable[str], status: Mapping[str, str]) -> set[str]:
        """The nodes whose status next_steps() needs after `changed` changed: their children,
        every descendant of a blocking one (it spreads "not run"), and the parents of those."""
        scope: set[str] = set()
        spreading: deque[str] = deque()
        for node in changed:
            scope.update(self.children[node])
            if status.get(node) in BLOCKING:
                spreading.extend(self.children[node])
        seen = set(spreading)
        while spreading:
            node = spreading.popleft()
            scope.add(node)
            for child in self.children[node]:
                if child not in seen:
                    seen.add(child)
                    spreading.append(child)
        return scope | {p for node in scope for p in self.parents[node]} | set(changed)


def next_steps(g: RunGraph, status: Mapping[str, str], frontier: Iterable[str]) -> Plan:
    """Which of the `frontier` nodes (and, through "not run", their descendants) can start or will
    never run. `status` holds at least those nodes and their parents (RunGraph.affected_by).
    `finished` is left to the caller, which knows every node's status."""
    status = dict(status)
    result = Plan()
    todo = deque(frontier)
    while todo:
        node = todo.popleft()
        if status.get(node) != PENDING:
            continue
        parents = [status[p] for p in g.parents[node]]
        if any(s in BLOCKING for s in parents):
            status[node] = NOT_RUN
            result.not_run.append(node)
            todo.extend(g.children[node])
        elif all(s in SUCCEEDED for s in parents):
            status[node] = QUEUED  # decided: not looked at twice
            result.ready.append(node)
    return result


def outcome(statuses: Iterable[str]) -> str:
    """A finished run's status from its nodes' statuses."""
    statuses = set(statuses)
    if FAILED in statuses:
        return FAILED
    if CANCELLED in statuses:
        return CANCELLED
    return COMPLETED
