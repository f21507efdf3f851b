"""A node run by the Celery workers: launched by sending its message (the outbox owes it from the
moment it is queued), healthy while its worker's heartbeat goes on, terminated by asking its
worker (the cancel request its heartbeat notices)."""
from __future__ import annotations

from designer.pipelines.runs import outbox
from designer.pipelines.runs.launchers import base, liveness


class CeleryLauncher(base.Launcher):
    def launch(self, step: base.Step) -> None:
        outbox.send([step.noderun_id])

    def launch_many(self, noderun_ids: list[int]) -> None:
        """launch() of several nodes at once (one pass of the outbox)."""
        if noderun_ids:
            outbox.send(noderun_ids)

    def check_health(self, step: base.Step) -> base.Health:
        return liveness.node_health(step)

    def terminate(self, step: base.Step) -> None:
        liveness.request_cancel(step)
