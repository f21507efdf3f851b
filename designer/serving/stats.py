"""A serving process's counts and heartbeat, written to the database by a thread of their own.

Requests only add to counters in memory (`Stats.record`, under a lock held for microseconds).
Every SERVING_FLUSH_SECONDS the flusher upserts this replica's ServingReplica row (last_seen and
what it has loaded), adds what was counted since the last flush to the replica's EndpointStats
row of each endpoint, and stores the recent errors (EndpointError, the last KEEP_ERRORS kept
per endpoint). When the database cannot be reached, the counts wait for the next flush.
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from designer.engine import latency
from designer.pipelines.models import EndpointError, EndpointStats, ServingReplica

log = logging.getLogger(__name__)
KEEP_ERRORS = 50


@dataclass
class Counts:
    """One endpoint's figures since the last flush."""

    requests: int = 0
    errors: int = 0
    latency: list[int] = field(default_factory=latency.empty)
    recent: list[tuple[datetime, int, str]] = field(default_factory=list)  # (at, status, message)

    def add(self, other: Counts) -> None:
        self.requests += other.requests
        self.errors += other.errors
        self.latency = latency.merge([self.latency, other.latency])
        self.recent = (other.recent + self.recent)[-KEEP_ERRORS:]


class Stats:
    """Counts per endpoint id, taken whole by each flush."""

    def __init__(self):
        self._lock = threading.Lock()
        self._counts: dict[int, Counts] = {}

    def record(self, endpoint_id: int, status: int, ms: float, message: str = "") -> None:
        """One answered request: latency counts for the ones that scored (200)."""
        with self._lock:
            counts = self._counts.get(endpoint_id)
            if counts is None:
                counts = self._counts[endpoint_id] = Counts()
            counts.requests += 1
            if status == 200:
                latency.add(counts.latency, ms)
            else:
                counts.errors += 1
                counts.recent.append((timezone.now(), status, message))
                del counts.recent[:-KEEP_ERRORS]

    def take(self) -> dict[int, Counts]:
        with self._lock:
            counts, self._counts = self._counts, {}
        return counts

    def put_back(self, counts: dict[int, Counts]) -> None:
        """Counts a flush could not write: added to what came since, for the next flush."""
        with self._lock:
            for endpoint_id, c in counts.items():
                c.add(self._counts.get(endpoint_id, Counts()))
                self._counts[endpoint_id] = c


class Flusher(threading.Thread):
    """The heartbeat: ServingReplica and the stats rows, every `interval` seconds."""

    def __init__(self, replica: str, stats: Stats, loaded: Callable[[], dict], interval: float):
        super().__init__(name="serving-stats", daemon=True)
        self.replica, self.stats, self.loaded, self.interval = replica, stats, loaded, interval
        self.stopping = threading.Event()
        self._failing = False

    def run(self):
        while not self.stopping.wait(self.interval):
            self.flush()

    def stop(self) -> None:
        """A last flush, then this replica's row goes: the endpoints' pages stop counting on it."""
        self.stopping.set()
        self.join(10)
        self.flush()
        try:
            ServingReplica.objects.filter(name=self.replica).delete()
        except Exception as e:
            log.warning("cannot remove the serving replica %s: %s", self.replica, e)
        connection.close()

    def flush(self) -> None:
        counts = self.stats.take()
        try:
            ServingReplica.objects.update_or_create(name=self.replica, defaults={"last_seen": timezone.now(), "loaded": self.loaded()})
            while counts:
                endpoint_id, c = next(iter(counts.items()))
                self._write(endpoint_id, c)
                del counts[endpoint_id]
            self._failing = False
        except Exception as e:
            if not self._failing:
                log.warning("cannot write the serving figures of %s (kept for the next try): %s", self.replica, e)
            self._failing = True
            self.stats.put_back(counts)
            connection.close()

    def _write(self, endpoint_id: int, c: Counts) -> None:
        try:
            with transaction.atomic():
                row, _ = EndpointStats.objects.select_for_update().get_or_create(endpoint_id=endpoint_id, replica=self.replica)
                row.requests += c.requests
                row.errors += c.errors
                row.latency = latency.merge([row.latency, c.latency])
                row.save()
                if c.recent:
                    EndpointError.objects.bulk_create(
                        [EndpointError(endpoint_id=endpoint_id, at=at, status=status, message=message) for at, status, message in c.recent])
                    # in the same transaction: no reader (the endpoint's page) ever sees more than KEEP_ERRORS
                    old = EndpointError.objects.filter(endpoint_id=endpoint_id).order_by("-at", "-id").values_list("id", flat=True)[KEEP_ERRORS:]
                    EndpointError.objects.filter(id__in=list(old)).delete()
        except IntegrityError:
            return  # the endpoint was deleted since: its figures go with it
