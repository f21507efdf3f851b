"""The workers as compute: what each offers and whether it is busy (the Compute page and
GET /api/compute)."""
from __future__ import annotations

from django.conf import settings
from django.utils import timezone

from designer.engine import scheduler as s
from designer.pipelines.models import NodeRun, Worker


def workers() -> list[dict]:
    now = timezone.now()
    running = {w.split(":", 1)[-1] for w in NodeRun.objects.filter(status=s.RUNNING).values_list("worker", flat=True)}
    rows = []
    for w in Worker.objects.select_related("reserved_by").order_by("hostname"):
        # a worker running a node, or one node of a distributed job that another worker runs
        reserved = w.reserved_by is not None and w.reserved_by.status == s.RUNNING
        rows.append({"hostname": w.hostname, "address": w.address, "cpus": w.cpus, "gpus": w.gpus,
                     "units": w.units, "concurrency": w.concurrency, "last_seen": w.last_seen.isoformat(),
                     "seconds_since_seen": round((now - w.last_seen).total_seconds(), 1),
                     "alive": (now - w.last_seen).total_seconds() < settings.LOST_AFTER_SECONDS,
                     "busy": w.hostname in running or reserved})
    return rows
