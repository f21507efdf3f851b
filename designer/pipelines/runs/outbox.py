"""Reliable dispatch of nodes to the workers: a transactional outbox kept on the NodeRun rows.

A node's message is fully described by its NodeRun id (`run_node(id)`, routed by routing.route_for),
so the row itself is the outbox record: `advance.advance()` sets `send_due_at` in the same UPDATE
that moves the node to queued. Nothing can be queued without a message being owed, and nothing
is owed for a node that is not queued (cancelled, or already picked up).

`send()` publishes what is due. Each send is claimed by a conditional UPDATE, so two senders
(the maintenance loop, a node that just finished) never send the same message at the same moment. A send the
broker refuses keeps the node owed, with the broker's error for the run's status, and is tried
again `RETRY_SECONDS` later. A message the broker took is owed again `RESEND_AFTER_SECONDS`
later (doubling with each resend, at most `RESEND_MAX_SECONDS`) if no worker picked it up while
a worker had a free slot: a broker that restarted empty (Redis keeps nothing) lost it. A
duplicate message is harmless: only one task can move a node from queued to running.
"""
from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.db.models import F
from django.utils import timezone

from designer.celery import RUN_NODE, app
from designer.engine import statuses as s
from designer.pipelines.compute import workers
from designer.pipelines.models import NodeRun
from designer.pipelines.runs import routing

log = logging.getLogger(__name__)
TASK = RUN_NODE  # tasks.run_node
BATCH = 200


def due(noderun_ids=None, run_id=None):
    """Queued nodes whose message is owed now (optionally: only these nodes, or this run's)."""
    qs = NodeRun.objects.filter(status=s.QUEUED, send_due_at__lte=timezone.now())
    if noderun_ids is not None:
        qs = qs.filter(pk__in=list(noderun_ids))
    if run_id is not None:
        qs = qs.filter(run_id=run_id)
    return qs


def send(noderun_ids=None, run_id=None) -> int:
    """Send the messages owed (all, or of these nodes / this run); return how many the broker took.
    Stops at the first refusal: the broker is down, the next caller tries again."""
    sent = 0
    now = timezone.now()
    # first sends before resends (a resend may wait for a free worker slot); no join for ordering
    for nr in due(noderun_ids, run_id).order_by("send_attempts", "send_due_at").only(
            "id", "run_id", "node_id", "kind", "send_due_at", "send_attempts")[:BATCH]:
        if nr.send_attempts and not _resend_allowed():
            break
        # claim this send: nobody else sends it until it is due again
        claimed = NodeRun.objects.filter(pk=nr.pk, status=s.QUEUED, send_due_at=nr.send_due_at).update(
            send_due_at=now + timedelta(seconds=_resend_delay(nr.send_attempts)))
        if not claimed:
            continue
        try:
            app.send_task(TASK, args=[nr.pk], **routing.route_for(nr), retry=True, retry_policy=RETRY_POLICY)
        except Exception as e:  # kombu's OperationalError, socket errors, a full broker...
            text = f"{type(e).__name__}: {e}".strip()
            NodeRun.objects.filter(pk=nr.pk, status=s.QUEUED).update(
                send_due_at=timezone.now() + timedelta(seconds=settings.DISPATCH_RETRY_SECONDS), send_error=text)
            log.warning("the broker refused the message of node run %s: %s", nr.pk, text)
            break
        NodeRun.objects.filter(pk=nr.pk).update(sent_at=timezone.now(), send_attempts=F("send_attempts") + 1, send_error="")
        sent += 1
    return sent


# one quick reconnection (a pooled connection gone stale after a broker restart), then give up:
# the caller is a web request or a node that just finished, and the outbox keeps the message
RETRY_POLICY = {"max_retries": 1, "interval_start": 0, "interval_step": 0.2, "interval_max": 0.2}


def _resend_delay(attempts: int) -> float:
    return min(settings.RESEND_AFTER_SECONDS * 2 ** attempts, settings.RESEND_MAX_SECONDS)


def _resend_allowed() -> bool:
    """Resend a message the broker took only while some live worker has a free slot: while all
    are busy, the message is most likely waiting its turn in the queue."""
    return workers.free_slots() > 0


def waiting_for_broker(run_id: int) -> str:
    """The broker's last refusal for this run's owed messages, or ''."""
    nr = NodeRun.objects.filter(run_id=run_id, status=s.QUEUED).exclude(send_error="").only("send_error", "queued_at").first()
    if nr is None:
        return ""
    since = f" since {nr.queued_at:%H:%M:%S} UTC" if nr.queued_at else ""
    return (f"Waiting for the message broker{since}: it refused the run's message ({nr.send_error}). "
            "The run is stored and starts as soon as the broker is back.")
