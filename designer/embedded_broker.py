"""The embedded broker: kombu's SQLAlchemy transport (a table of messages in SQLite), polled fast
while there is work and slowly when there is none.

A virtual transport has no way to be woken up: a worker finds a message only by asking the
database. Asking every BROKER_POLL_SECONDS (0.02 s) keeps the latency between the nodes of a
pipeline at a few tens of milliseconds, but costs an idle worker about 15% of a core, taken from
the training processes that run beside it. So a worker polls fast for BROKER_BUSY_SECONDS after
its last message (a pipeline's next node comes within that time) and every
BROKER_IDLE_POLL_SECONDS after that.
"""
from __future__ import annotations

from queue import Empty
from time import monotonic, sleep

from django.conf import settings
from kombu.transport import sqlalchemy


class Transport(sqlalchemy.Transport):
    _last_message = 0.0

    def drain_events(self, connection, timeout=None):
        start = monotonic()
        while True:
            try:
                self.cycle.get(self._deliver, timeout=timeout)
            except Empty:
                now = monotonic()
                if timeout is not None and now - start >= timeout:
                    raise TimeoutError() from None  # socket.timeout: what Celery waits for
                sleep(self._interval(now))
            else:
                self._last_message = monotonic()
                return

    def _interval(self, now: float) -> float:
        if now - self._last_message < settings.BROKER_BUSY_SECONDS:
            return settings.BROKER_POLL_SECONDS
        return settings.BROKER_IDLE_POLL_SECONDS
