"""Nodes run in this process, one after the other, through the same engine (run_pipeline
--inline): launching a node runs it, then every node it made ready. A node that a worker claims
first is left to the worker."""
from __future__ import annotations

from collections.abc import Callable

from designer.pipelines.runs.launchers import base, liveness


class InlineLauncher(base.Launcher):
    def __init__(self, execute: Callable[[int], list[int]]):
        """`execute(noderun_id)` runs one queued node here and returns the ids it made ready
        (execute.execute_noderun)."""
        self.execute = execute

    def launch(self, step: base.Step) -> None:
        todo = [step.noderun_id]
        while todo:
            todo += self.execute(todo.pop(0))

    def check_health(self, step: base.Step) -> base.Health:
        return liveness.node_health(step)

    def terminate(self, step: base.Step) -> None:
        liveness.request_cancel(step)
