"""Store the engine's events, then nudge open pages.

Storage is the truth: a page (or a reconnecting one) reads events after the last id it saw. The
broadcast only wakes listeners up sooner; with the in-memory Channels layer (embedded mode) it
cannot cross from a worker process, so consumers also poll the store.
"""
from __future__ import annotations

import asyncio
import os
import threading
import time

from channels.layers import InMemoryChannelLayer, get_channel_layer
from django.db import transaction

from designer.pipelines.models import Event, Trial

_sweep_of_run: dict[int, int | None] = {}  # a run's sweep never changes: looked up once per process


def group_name(run_id: int) -> str:
    return f"run-{run_id}"


def sweep_group_name(sweep_id: int) -> str:
    return f"sweep-{sweep_id}"


def nudge_sweep(sweep_id: int) -> None:
    """Wake the pages of a sweep (a trial started or ended, or its run recorded events)."""
    layer = get_channel_layer()
    if layer is not None and not isinstance(layer, InMemoryChannelLayer):
        transaction.on_commit(lambda: _broadcaster.send(layer, sweep_group_name(sweep_id), {"type": "sweep.nudge"}))


def _sweep_of(run_id: int) -> int | None:
    if run_id not in _sweep_of_run:
        if len(_sweep_of_run) > 10_000:
            _sweep_of_run.clear()
        _sweep_of_run[run_id] = Trial.objects.filter(run_id=run_id).values_list("sweep_id", flat=True).first()
    return _sweep_of_run[run_id]


def record(run_id: int, event) -> None:
    record_many(run_id, [event])


def record_many(run_id: int, batch: list) -> None:
    Event.objects.bulk_create(Event(run_id=run_id, node_id=e.node, type=e.type, data=e.data) for e in batch)
    layer = get_channel_layer()
    if layer is not None and not isinstance(layer, InMemoryChannelLayer):
        # after commit: a listener woken earlier would read the store before the event is in it
        transaction.on_commit(lambda: _broadcaster.send(layer, group_name(run_id), {"type": "run.nudge"}))
        sweep_id = _sweep_of(run_id)
        if sweep_id is not None:
            nudge_sweep(sweep_id)


class Buffer:
    """A running node's events, stored in batches: a module that logs a line per batch of
    images must not pay a database commit per line. Whatever waits longer than `max_delay`
    goes out with the next event, or with the next flush() (the node's heartbeat calls it)."""

    def __init__(self, run_id: int, max_delay: float = 0.5):
        self.run_id, self.max_delay = run_id, max_delay
        self.pending: list = []
        self.lock = threading.Lock()
        self.last_flush = time.monotonic()

    def add(self, event) -> None:
        with self.lock:
            self.pending.append(event)
        if time.monotonic() - self.last_flush >= self.max_delay:
            self.flush()

    def flush(self) -> None:
        with self.lock:  # held while storing, so that batches are stored in order
            batch, self.pending = self.pending, []
            self.last_flush = time.monotonic()
            if batch:
                try:
                    record_many(self.run_id, batch)
                except BaseException:
                    self.pending[:0] = batch  # kept, in order, for the next flush: a failed store loses no event
                    raise


class _Broadcaster:
    """One event loop thread per process sends the nudges: the caller (a worker running a node)
    does not wait for Redis, and the layer keeps one connection pool instead of one per call."""

    def __init__(self):
        self.lock = threading.Lock()
        self.loop = None
        self.pid = None

    def send(self, layer, group: str, message: dict) -> None:
        with self.lock:
            if self.pid != os.getpid():  # first use, or a forked worker process
                self.loop, self.pid = asyncio.new_event_loop(), os.getpid()
                threading.Thread(target=self.loop.run_forever, daemon=True, name="event-broadcast").start()
        asyncio.run_coroutine_threadsafe(layer.group_send(group, message), self.loop)


_broadcaster = _Broadcaster()


def since(run_id: int, after_id: int = 0, limit: int = 500) -> list[dict]:
    return [
        {"id": e.id, "type": e.type, "node": e.node_id, "data": e.data, "at": e.created_at.isoformat()}
        for e in Event.objects.filter(run_id=run_id, id__gt=after_id).order_by("id")[:limit]
    ]
