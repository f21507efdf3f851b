"""The embedded broker (designer/embedded_broker.py, SQLite): a worker asked to stop stops waiting
for messages at once, rather than after Celery's 2-s wait, twice (`make run`'s Ctrl-C, and every
worker a test stops)."""
import time

import pytest
from celery.worker import state as worker_state
from kombu import Connection, Exchange, Queue


@pytest.fixture
def consumer(tmp_path):
    queue = Queue("q", Exchange("x", type="direct"), routing_key="q")
    with Connection(f"sqla+sqlite:///{tmp_path / 'broker.sqlite3'}") as conn:
        got = []
        with conn.Consumer(queue, callbacks=[lambda body, message: got.append(body)]):
            conn.got = got
            conn.send = lambda body: conn.Producer().publish(body, exchange=queue.exchange, routing_key="q", declare=[queue])
            yield conn


def drain(conn, timeout: float) -> float:
    start = time.monotonic()
    with pytest.raises(TimeoutError):
        conn.drain_events(timeout=timeout)
    return time.monotonic() - start


def test_a_waiting_worker_waits_for_messages_until_its_timeout_and_then_gets_them(consumer):
    assert drain(consumer, 0.5) >= 0.5
    consumer.send({"n": 1})
    consumer.drain_events(timeout=5)
    assert consumer.got == [{"n": 1}]


@pytest.mark.parametrize("flag", ["should_stop", "should_terminate"])
def test_a_worker_asked_to_stop_stops_waiting_for_messages_at_once(consumer, monkeypatch, flag):
    monkeypatch.setattr(worker_state, flag, 0)  # the exit code the TERM (or QUIT) handler sets: 0
    assert drain(consumer, 30) < 5  # not 30 s: the next poll sees it (0.25 s when idle)
