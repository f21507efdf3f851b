"""The embedded broker: kombu's SQLAlchemy transport (a table of messages in SQLite), polled fast
while there is work and slowly when there is none.

A virtual transport has no way to be woken up: a worker finds a message only by asking the
database. Asking every BROKER_POLL_SECONDS (0.02 s) keeps the latency between the nodes of a
pipeline at a few tens of milliseconds, but costs an idle worker about 15% of a core, taken from
the training processes that run beside it. So a worker polls fast for BROKER_BUSY_SECONDS after
its last message (a pipeline's next node comes within that time) and every
BROKER_IDLE_POLL_SECONDS after that.

kombu marks a message it hands out invisible and keeps it: the table grows with every message
ever sent, and each poll walks past all of them (in the order of the timestamp index) to reach a
visible one, so a 2,000-node pipeline's last nodes waited twice as long as its first. A message
handed out is never handed out again either way (this transport has no acknowledgement): this
channel deletes it instead, and remembers each queue's row rather than looking it up per poll.
"""
from __future__ import annotations

from queue import Empty
from time import monotonic, sleep

from celery.worker import state as worker_state
from django.conf import settings
from kombu.transport import sqlalchemy
from kombu.utils.encoding import bytes_to_str
from kombu.utils.json import loads
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError


class Channel(sqlalchemy.Channel):
    _queues: dict | None = None

    def _queue_id(self, queue) -> int:
        """The queue's row id, looked up once (kombu's own _get_or_create queries it at each call)."""
        if self._queues is None:
            self._queues = {}
            # messages handed out by kombu's own channel (before this one) are never given again
            self.session.query(self.message_cls).filter(self.message_cls.visible == False).delete()  # noqa: E712 - SQL
            self.session.commit()
        if queue not in self._queues:
            try:
                self._queues[queue] = super()._get_or_create(queue).id
            except IntegrityError:  # another process (a second worker starting) made it between kombu's look and its insert
                self.session.rollback()
                self._queues[queue] = super()._get_or_create(queue).id
        return self._queues[queue]

    def _put(self, queue, payload, **kwargs):
        self.session.execute(self.message_cls.__table__.insert().values(
            payload=sqlalchemy.dumps(payload), queue_id=self._queue_id(queue), visible=True, version=1))
        try:
            self.session.commit()
        except sqlalchemy.OperationalError:
            self.session.rollback()

    def _get(self, queue):
        queue_id = self._queue_id(queue)
        self.session.execute(text("BEGIN IMMEDIATE TRANSACTION"))  # SQLite: take the write lock first
        try:
            msg = (self.session.query(self.message_cls).filter(self.message_cls.queue_id == queue_id)
                   .order_by(self.message_cls.sent_at, self.message_cls.id).limit(1).first())
            if msg is None:
                raise Empty()
            payload = msg.payload
            self.session.delete(msg)
            return loads(bytes_to_str(payload))
        finally:
            self.session.commit()

    def _query_all(self, queue):
        return self.session.query(self.message_cls).filter(self.message_cls.queue_id == self._queue_id(queue))

    def _size(self, queue):
        return self._query_all(queue).count()  # every message here is visible: one handed out is deleted


def _stopping() -> bool:
    """Celery's own test (celery.worker.state.maybe_shutdown): an exit code, 0 included."""
    return any(flag is not None and flag is not False for flag in (worker_state.should_stop, worker_state.should_terminate))


class Transport(sqlalchemy.Transport):
    Channel = Channel
    _last_message = 0.0

    def drain_events(self, connection, timeout=None):
        start = monotonic()
        while True:
            try:
                self.cycle.get(self._deliver, timeout=timeout)
            except Empty:
                now = monotonic()
                # a worker asked to stop (TERM, Ctrl-C) stops waiting: Celery's loop waits on its
                # broker 2 s at a time, and asks twice before it shuts down (4 s of nothing)
                if timeout is not None and now - start >= timeout or _stopping():
                    raise TimeoutError() from None  # socket.timeout: what Celery waits for
                sleep(self._interval(now))
            else:
                self._last_message = monotonic()
                return

    def _interval(self, now: float) -> float:
        if now - self._last_message < settings.BROKER_BUSY_SECONDS:
            return settings.BROKER_POLL_SECONDS
        return settings.BROKER_IDLE_POLL_SECONDS
