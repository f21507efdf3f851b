"""While a node runs: prove that its worker is alive, store its buffered events, and notice a
cancel request.

Noticing is all it does about a cancel: it sets a flag that the module reads at its safe points
(`ctx.check_cancelled()`), and that a distributed node's launcher reads to end its processes.
Nothing is injected into the module's thread, so a cancel never lands inside a `finally` or a
file write. A module that reaches no safe point within CANCEL_GRACE_SECONDS is handed to
`on_overdue` (execute.py: the node is recorded as cancelled and its process ended).
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable

from django.conf import settings
from django.db import Error as DatabaseError
from django.db import connection
from django.utils import timezone

from designer.engine import statuses as st
from designer.pipelines.models import NodeRun, Run
from designer.pipelines.runs import events


class NodeHeartbeat(threading.Thread):
    """`with NodeHeartbeat(...) as beat:` around a node's work; `beat.cancelled()` says whether
    the user asked to cancel the run."""

    def __init__(self, noderun_id: int, run_id: int, buffer: events.Buffer, on_overdue: Callable[[], None] | None = None,
                 attempt: int | None = None):
        """`attempt`: the node's attempt this worker runs (a worker thought lost, whose node runs
        again elsewhere, keeps no later attempt alive)."""
        super().__init__(daemon=True, name=f"heartbeat-{noderun_id}")
        self.noderun_id, self.run_id, self.buffer = noderun_id, run_id, buffer
        self.attempt = {} if attempt is None else {"attempt": attempt}
        self.on_overdue = on_overdue
        self.stopped = threading.Event()
        self.cancel_seen = threading.Event()
        self.cancel_seen_at = 0.0

    def cancelled(self) -> bool:
        return self.cancel_seen.is_set()

    def cancel_requested(self) -> bool:
        """Whether the user has asked to cancel the run, read now rather than at the last beat: a
        distributed node's other workers may notice a cancel, and end their processes, before this
        node's beat does, and the node then fails of it (a lost peer) while it is being cancelled."""
        return self.cancelled() or Run.objects.filter(pk=self.run_id, cancel_requested=True).exists()

    def __enter__(self) -> NodeHeartbeat:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stopped.set()
        self.join()

    def run(self) -> None:
        try:
            while not self.stopped.wait(settings.HEARTBEAT_SECONDS):
                try:
                    self.beat()
                except DatabaseError as e:
                    # a locked SQLite file, a dropped connection: the next beat tries again (a
                    # heartbeat thread that died would get a live node reaped as lost)
                    print(f"heartbeat of node run {self.noderun_id} missed a beat: {e}", flush=True)
                    connection.close()
        finally:
            connection.close()

    def beat(self) -> None:
        self.buffer.flush()
        NodeRun.objects.filter(pk=self.noderun_id, status=st.RUNNING, **self.attempt).update(heartbeat_at=timezone.now())
        if not self.cancel_seen.is_set() and Run.objects.filter(pk=self.run_id, cancel_requested=True).exists():
            self.cancel_seen_at = time.monotonic()
            self.cancel_seen.set()
        elif (self.cancel_seen.is_set() and self.on_overdue is not None and not self.stopped.is_set()
              and time.monotonic() - self.cancel_seen_at > settings.CANCEL_GRACE_SECONDS):
            overdue, self.on_overdue = self.on_overdue, None  # once: it ends this process, or the module ended first
            overdue()
