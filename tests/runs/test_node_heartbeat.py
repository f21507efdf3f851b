"""A running node's heartbeat (designer/pipelines/runs/node_heartbeat.py) outlives a database hiccup:
a beat that fails (a locked SQLite file, a dropped PostgreSQL connection) is missed, not fatal,
and the events it was storing are kept for the next flush."""
import threading

import pytest
from django.db import OperationalError

from designer.engine import statuses
from designer.engine.executor import Event as EngineEvent
from designer.pipelines.models import Event, NodeRun
from designer.pipelines.runs import events
from designer.pipelines.runs import service as runs
from designer.pipelines.runs.node_heartbeat import NodeHeartbeat
from tests.pipes import node, pipeline

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.production]


def test_a_beat_that_fails_is_missed_and_the_heartbeat_goes_on(users, monkeypatch, capfd):
    real_beat = NodeHeartbeat.beat
    calls, beat_after_failures = [], threading.Event()

    def flaky_beat(self):
        calls.append(1)
        if len(calls) <= 2:
            raise OperationalError("database is locked")
        real_beat(self)
        beat_after_failures.set()

    monkeypatch.setattr(NodeHeartbeat, "beat", flaky_beat)
    doc = pipeline([node("t", "toy_training", epochs=8, epoch_seconds=0.5)], [], "beats")
    run = runs.submit(users["owner"], doc, inline=True)
    run.refresh_from_db()
    assert run.status == statuses.COMPLETED
    assert beat_after_failures.is_set(), f"the heartbeat stopped after its failed beats ({len(calls)} calls)"
    assert NodeRun.objects.get(run=run, node_id="t").heartbeat_at is not None
    losses = [(e.data["step"], e.data["value"]) for e in Event.objects.filter(run=run, node_id="t", type="metric", data__name="loss")]
    assert losses == [(e, pytest.approx(1.0 / e)) for e in range(1, 9)]  # every event buffered meanwhile, in order
    assert "missed a beat: database is locked" in capfd.readouterr().out


def test_a_batch_that_could_not_be_stored_is_kept_in_order_for_the_next_flush(users, monkeypatch):
    run = runs.submit(users["owner"], pipeline([node("s", "toy_source", value=1)], [], "buffer"), inline=True)
    before = Event.objects.filter(run=run).count()
    real_store, attempts = events.record_many, []

    def fails_once(run_id, batch):
        attempts.append(len(batch))
        if len(attempts) == 1:
            raise OperationalError("database is locked")
        return real_store(run_id, batch)

    monkeypatch.setattr(events, "record_many", fails_once)
    buffer = events.Buffer(run.id, max_delay=3600)
    buffer.add(metric(1))
    buffer.add(metric(2))
    with pytest.raises(OperationalError):
        buffer.flush()
    buffer.add(metric(3))
    buffer.flush()
    assert attempts == [2, 3]
    stored = Event.objects.filter(run=run).order_by("id")[before:]
    assert [e.data["step"] for e in stored] == [1, 2, 3]


def metric(step):
    return EngineEvent("metric", "s", {"name": "loss", "value": 1.0 / step, "step": step})
