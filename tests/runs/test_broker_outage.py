"""Runs survive a broker outage (the transactional outbox, designer/pipelines/runs/outbox.py).

A real Redis server of the test's own, on its own port, is the broker of a real daphne and of
real Celery workers; the test stops and restarts it. Redis keeps nothing on disk here, as on the
machine's own service: a restart loses every message it held.
"""
import json
import secrets
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections import Counter

import pytest

from tests.conftest import TEST_DATA, wait_for_run
from tests.pipes import chain
from tests.servers import free_port
from tests.workers import MaintenanceProcess

pytestmark = [pytest.mark.production, pytest.mark.skipif(not shutil.which("redis-server"), reason="needs redis-server")]

# fast enough for a test: a refused message is tried again every 0.5 s, a lost one after 3 s
OUTBOX_ENV = {"DISPATCH_RETRY_SECONDS": "0.5", "RESEND_AFTER_SECONDS": "3"}


class Redis:
    """A redis-server of this test's own: stopping it stops no one else's broker."""

    def __init__(self):
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc = None
        self.start()

    def start(self):
        self.proc = subprocess.Popen(["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                                      "--appendonly", "no", "--dir", str(TEST_DATA)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as c:
                    c.sendall(b"PING\r\n")
                    if c.recv(64).startswith(b"+PONG"):
                        return
            except OSError:
                time.sleep(0.05)
        raise TimeoutError(f"redis-server on port {self.port} did not start")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(20)


@pytest.fixture
def redis():
    r = Redis()
    yield r
    r.stop()


@pytest.fixture
def web(redis, transactional_db, monkeypatch):
    """daphne on the test database, with the test's Redis as its broker."""
    from tests.e2e.conftest import Server  # the page server, with this test's broker

    monkeypatch.setenv("CELERY_BROKER_URL", redis.url)
    for k, v in OUTBOX_ENV.items():
        monkeypatch.setenv(k, v)
    s = Server().wait_ready()
    yield s
    s.stop()


class Api:
    """The JSON API as a script uses it: a session cookie and a CSRF token."""

    def __init__(self, server, user):
        from django.test import Client

        c = Client()
        c.force_login(user)
        self.base, self.token = server.url, secrets.token_hex(16)
        self.cookie = f"sessionid={c.cookies['sessionid'].value}; csrftoken={self.token}"

    def call(self, method, path, body=None):
        req = urllib.request.Request(self.base + path, method=method, data=None if body is None else json.dumps(body).encode(),
                                     headers={"Cookie": self.cookie, "X-CSRFToken": self.token, "Content-Type": "application/json",
                                              "Referer": self.base + "/"})
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"{}")


def start_workers(start_worker, redis, *names):
    return [start_worker(name, concurrency=1, extra_env={"CELERY_BROKER_URL": redis.url, **OUTBOX_ENV}) for name in names]


def submit(api, users, doc):
    from designer.pipelines.models import Pipeline

    p = Pipeline.objects.create(owner=users["owner"], name=doc["name"], draft=doc)
    started = time.monotonic()
    status, body = api.call("POST", f"/api/pipelines/{p.pk}/runs")
    return status, body, time.monotonic() - started


def assert_each_node_ran_once(run):
    from designer.pipelines.models import Event

    assert run.status == "completed", {nr.node_id: (nr.status, nr.error) for nr in run.nodes.all()}
    started = Counter(Event.objects.filter(run=run, type="node_started").values_list("node_id", flat=True))
    assert started == Counter({nr.node_id: 1 for nr in run.nodes.all()}), f"a node ran more than once (or never): {started}"


def test_a_run_submitted_while_the_broker_is_down_is_answered_waits_and_starts_when_it_is_back(web, redis, users, start_worker):
    start_workers(start_worker, redis, "w1")
    api = Api(web, users["owner"])
    redis.stop()

    status, body, seconds = submit(api, users, chain(3, name="during the outage"))
    assert status == 201, body
    assert seconds < 10, f"the submit took {seconds:.1f} s while the broker was down"
    # the web app's own try, or a worker's heartbeat that took the message first and fails a moment later
    deadline = time.monotonic() + 20
    while "Waiting for the message broker" not in (body := api.call("GET", f"/api/runs/{body['id']}")[1])["message"]:
        assert time.monotonic() < deadline, body
        time.sleep(0.2)
    assert body["status"] in ("queued", "running"), body
    assert "starts as soon as the broker is back" in body["message"]

    redis.start()
    run = wait_for_run(body["id"], timeout=120)
    assert_each_node_ran_once(run)
    assert not run.nodes.exclude(send_error="").exists(), "the broker's old refusal is cleared once it took the message"


def test_a_broker_restart_mid_run_loses_no_node_and_runs_none_twice(web, redis, users, start_worker, tmp_path):
    start_workers(start_worker, redis, "w1", "w2")
    api = Api(web, users["owner"])
    hold = tmp_path / "hold"  # n1 runs on only once the broker is down
    hold.touch()
    doc = chain(5, sleep=1.0, name="across an outage")
    doc["nodes"][1]["parameters"]["hold_file"] = str(hold)
    status, body, _ = submit(api, users, doc)
    assert status == 201, body
    run_id = body["id"]
    wait_for_run(run_id, timeout=60, until=lambda r: r.nodes.filter(node_id="n1", status="running").exists())
    redis.stop()  # n1 finishes while the broker is down: n2's message cannot be sent
    hold.unlink()
    from designer.pipelines.models import NodeRun

    deadline = time.monotonic() + 60
    while not NodeRun.objects.filter(run_id=run_id, node_id="n2", status="queued").exclude(send_error="").exists():
        assert time.monotonic() < deadline, "n2 was never queued with the broker's refusal recorded"
        time.sleep(0.1)
    _, body = api.call("GET", f"/api/runs/{run_id}")
    assert "Waiting for the message broker" in body["message"], body
    redis.start()
    assert_each_node_ran_once(wait_for_run(run_id, timeout=180))


def test_a_run_queued_with_no_worker_starts_after_the_broker_restarted_empty(web, redis, users, start_worker):
    api = Api(web, users["owner"])
    status, body, _ = submit(api, users, chain(2, name="no worker yet"))
    assert status == 201 and body["message"].startswith("No worker is running"), body
    redis.stop()  # the message the broker held is gone with it
    redis.start()
    start_workers(start_worker, redis, "w1")  # the worker's heartbeat sends the lost message again
    assert_each_node_ran_once(wait_for_run(body["id"], timeout=120))


def test_the_maintenance_process_alone_sends_a_refused_message_once_the_broker_is_back_and_a_killed_one_is_taken_over(web, redis, users, start_worker):
    """No worker is up: `manage.py maintenance` sends what the broker refused, once, and the message
    waits in the queue for the first worker. The first maintenance process is killed (SIGKILL: it gives
    nothing up) while the broker is down; a second one takes its lease over once it lapses."""
    import redis as redis_client

    from designer.pipelines.models import NodeRun

    api = Api(web, users["owner"])
    first_process = MaintenanceProcess("first", TEST_DATA, {"CELERY_BROKER_URL": redis.url, **OUTBOX_ENV}).wait_holding()
    redis.stop()
    status, body, _ = submit(api, users, chain(2, name="sent by the maintenance process"))
    assert status == 201, body
    run_id = body["id"]
    first = NodeRun.objects.get(run_id=run_id, node_id="n0")
    assert first.status == "queued" and first.send_error and first.sent_at is None, (first.status, first.send_error)
    first_process.end(signal.SIGKILL)
    second_process = MaintenanceProcess("second", TEST_DATA, {"CELERY_BROKER_URL": redis.url, **OUTBOX_ENV})
    try:
        second_process.wait_holding()  # once the killed one's lease lapsed (MAINTENANCE_LEASE_SECONDS)
        assert "Waiting for the message broker" in api.call("GET", f"/api/runs/{run_id}")[1]["message"]
        redis.start()
        queue = redis_client.Redis.from_url(redis.url)
        deadline = time.monotonic() + 30
        # what the maintenance process sent, then recorded as sent (the row is written after the send)
        while queue.llen("designer") == 0 or first.sent_at is None:
            assert time.monotonic() < deadline, api.call("GET", f"/api/runs/{run_id}")[1]
            time.sleep(0.2)
            first.refresh_from_db()
        assert first.send_error == "" and first.sent_at is not None and first.send_attempts == 1
        assert queue.llen("designer") == 1  # once: the next ticks do not send it again
        assert "Waiting for the message broker" not in api.call("GET", f"/api/runs/{run_id}")[1]["message"]
    finally:
        second_process.end()
    start_workers(start_worker, redis, "w1")
    assert_each_node_ran_once(wait_for_run(run_id, timeout=120))
