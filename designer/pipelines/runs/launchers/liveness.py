"""Is a running node still looked after? Its worker (or the process running it inline) writes
its heartbeat (node_heartbeat.py); a node whose heartbeat is older than LOST_AFTER_SECONDS was
lost with its worker: killed, crashed or unplugged."""
from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from designer.engine import statuses as st
from designer.pipelines.models import NodeRun, Run
from designer.pipelines.runs.launchers import base, explain


def lost_limit():
    return timezone.now() - timedelta(seconds=settings.LOST_AFTER_SECONDS)


def node_health(step: base.Step) -> base.Health:
    nr = NodeRun.objects.select_related("worker").filter(pk=step.noderun_id).first()
    if nr is None or nr.status in st.TERMINAL:
        return base.DONE
    if nr.status != st.RUNNING or nr.heartbeat_at is None or nr.heartbeat_at >= lost_limit():
        return base.RUNNING  # queued (waiting for a worker), or alive
    who = nr.worker_label or "that ran it inline (run_pipeline --inline)"
    text = (f"WorkerLostError: the worker {who} stopped responding while running this node "
            f"(no heartbeat since {nr.heartbeat_at:%Y-%m-%d %H:%M:%S} UTC): it was killed or lost.")
    return base.Health(False, text + explain.lost_with_worker(nr))


def request_cancel(step: base.Step) -> None:
    """Ask the node's worker to stop it: its heartbeat notices, and the module stops at its next
    safe point (ctx.check_cancelled) or its processes are ended."""
    Run.objects.filter(pk__in=NodeRun.objects.filter(pk=step.noderun_id).values("run_id")).update(cancel_requested=True)
