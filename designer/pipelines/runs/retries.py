"""Automatic retries: a node whose worker was lost (killed, out of memory, a machine gone) goes back
to the queue and runs again on any suitable worker, up to its Max retries (run setting
`max_retries`, default graph.DEFAULT_MAX_RETRIES; 0: never). A training goes on from its last
checkpoint (Train PyTorch Model keeps one in the node's `work/` folder, in the store with a
bucket: execute.py brings it back before the next attempt). A user's error in the code or the data
ends the node as before: only a lost worker is retried.

Each attempt left behind is recorded on the node (NodeRun.attempts: which worker, when it was
last heard of, why, when it went back to the queue); the node pane lists them. A worker that was
only silent and comes back finds the node taken by the next attempt: its results are not kept
(execute.py's transitions name the attempt)."""
from __future__ import annotations

from django.utils import timezone

from designer.engine import graph
from designer.engine import statuses as st
from designer.engine.executor import Event
from designer.pipelines.models import NodeLaunch, NodeRun
from designer.pipelines.runs import events
from designer.pipelines.runs.advance import transition
from designer.pipelines.runs.rungraph import run_graph

MAX_REASON = 2000  # of a lost attempt's reason, as kept on the node


def max_retries(nr: NodeRun) -> int:
    """The node's Max retries run setting."""
    node = run_graph(nr.run).nodes[nr.node_id]
    return int((node.get("run_settings") or {}).get("max_retries", graph.DEFAULT_MAX_RETRIES))


def retry_lost(nr: NodeRun, reason: str) -> bool:
    """Queue a running node whose worker was lost for its next attempt, if it has retries left;
    True when it went back to the queue (its message is then owed by the outbox: dispatch it)."""
    allowed = max_retries(nr)
    if nr.attempt > allowed or nr.worker_id is None:
        return False  # none left; or it ran inline, in a process that is gone (run_pipeline --inline)
    if NodeLaunch.objects.filter(noderun_id=nr.pk).exists():
        return False  # a distributed job (its processes under torchrun, maybe on several workers): it fails
    now = timezone.now()
    record = {"attempt": nr.attempt, "worker": nr.worker_label, "reason": reason[:MAX_REASON],
              "started_at": nr.started_at.isoformat() if nr.started_at else None,
              "lost_at": nr.heartbeat_at.isoformat() if nr.heartbeat_at else None, "retried_at": now.isoformat()}
    if not transition(nr, st.RUNNING, st.QUEUED, of_attempt=nr.attempt, attempt=nr.attempt + 1, attempts=[*nr.attempts, record],
                      worker=None, heartbeat_at=None, queued_at=now, send_due_at=now, sent_at=None, send_error=""):
        return False  # it ended (or was taken) meanwhile
    text = (f"attempt {record['attempt']} lost: {reason[:MAX_REASON]} Running it again "
            f"(attempt {nr.attempt} of at most {allowed + 1}: Max retries {allowed}).")
    events.record(nr.run_id, Event("node_queued", nr.node_id, {"attempt": nr.attempt, "retry": text}))
    return True
