"""The launcher boundary (Dagster's step handler: launch_step, check_step_health,
terminate_step): a `Step` is launched, its `Health` checked, and it is terminated."""
from __future__ import annotations

import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

POLL_SECONDS = 0.25


@dataclass
class Step:
    """One piece of work: a node run; for the processes of a distributed node, also the module's
    context (designer.engine.executor.NodeContext) and the job it asked for (DistributedJob)."""

    noderun_id: int
    ctx: Any = None
    job: Any = None


@dataclass(frozen=True)
class Health:
    running: bool
    failure: str = ""  # why it failed (then running is False); '' while running or once it succeeded
    error: type[Exception] | None = None  # what supervise() raises with it: the launcher's Failure unless set


RUNNING = Health(True)
DONE = Health(False)


class Launcher(ABC):
    Failure: type[Exception] = RuntimeError  # what supervise() raises with a failure's text

    @abstractmethod
    def launch(self, step: Step) -> None:
        """Start the step (or hand it to whatever starts it)."""

    @abstractmethod
    def check_health(self, step: Step) -> Health:
        """Running, done, or failed and why (a lost worker, a failed process)."""

    @abstractmethod
    def terminate(self, step: Step) -> None:
        """Stop the step: reach a safe point or end its processes. Safe to call twice."""


def supervise(launcher: Launcher, step: Step, cancelled=lambda: None, poll: float = POLL_SECONDS) -> None:
    """Launch `step` and watch it until it ends; terminate whatever is left in any case.
    `cancelled()` raises to stop early (the module's ctx.check_cancelled)."""
    try:
        launcher.launch(step)
        while (health := launcher.check_health(step)).running:
            time.sleep(poll)
            cancelled()
        if health.failure:
            raise (health.error or launcher.Failure)(health.failure)
    finally:
        launcher.terminate(step)
