"""The workers as compute: what each offers and whether it is busy (the Compute page and
GET /api/compute). A worker that shut down is not listed (its row stays for the nodes it ran)."""
from __future__ import annotations

from django.conf import settings
from django.utils import timezone

from designer.pipelines import workers as live
from designer.pipelines.models import Worker


def workers() -> list[dict]:
    now = timezone.now()
    rows = []
    # busy: a worker running a node, or one node of a distributed job that another worker runs
    for w in Worker.objects.filter(stopped_at__isnull=True).annotate(busy=live.is_busy()).order_by("hostname"):
        seconds = (now - w.last_seen).total_seconds()
        rows.append({"hostname": w.hostname, "address": w.address, "cpus": w.cpus, "gpus": w.gpus,
                     "units": w.units, "concurrency": w.concurrency, "last_seen": w.last_seen.isoformat(),
                     "seconds_since_seen": round(seconds, 1), "alive": seconds < settings.LOST_AFTER_SECONDS,
                     "busy": bool(w.busy),
                     # the pretrained weights it has (the modules' pre-flight checks read them)
                     "weights_folder": w.weights.get("folder", ""), "weights": w.weights.get("files", [])})
    return rows
