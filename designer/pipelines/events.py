"""Store the engine's events, then nudge open pages.

Storage is the truth: a page (or a reconnecting one) reads events after the last id it saw. The
broadcast only wakes listeners up sooner; with the in-memory Channels layer (embedded mode) it
cannot cross from a worker process, so consumers also poll the store.
"""
from __future__ import annotations

from asgiref.sync import async_to_sync
from channels.layers import InMemoryChannelLayer, get_channel_layer

from designer.pipelines.models import Event


def group_name(run_id: int) -> str:
    return f"run-{run_id}"


def record(run_id: int, event) -> Event:
    stored = Event.objects.create(run_id=run_id, node_id=event.node, type=event.type, data=event.data)
    layer = get_channel_layer()
    if layer is not None and not isinstance(layer, InMemoryChannelLayer):
        async_to_sync(layer.group_send)(group_name(run_id), {"type": "run.nudge", "event_id": stored.id})
    return stored


def since(run_id: int, after_id: int = 0, limit: int = 500) -> list[dict]:
    return [
        {"id": e.id, "type": e.type, "node": e.node_id, "data": e.data, "at": e.created_at.isoformat()}
        for e in Event.objects.filter(run_id=run_id, id__gt=after_id).order_by("id")[:limit]
    ]
