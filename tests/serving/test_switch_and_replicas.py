"""Issue 13, item 4: an endpoint switched to another version under load loses no request; several
replicas behind one port all serve; each replica's counts, latencies and refused requests reach
the database (what the endpoint's page shows)."""
import http.client
import threading
import time

import numpy as np
import pytest
from django.test import Client

from designer.engine import latency
from designer.pipelines.endpoints import service as endpoint_pages
from designer.pipelines.models import EndpointError, EndpointStats, ServingReplica
from designer.serving.stats import KEEP_ERRORS
from tests.conftest import TEST_DATA
from tests.serving.helpers import Serving, deploy, multipart, png, register, request, score_url

CLIENTS = 6


def wait_until(condition, timeout=60, what="the condition"):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what} did not happen in {timeout} s"
        time.sleep(0.02)


class Hammer:
    """CLIENTS threads, each sending the same image over its own kept-alive connection until stopped;
    `answers[i]` is client i's list of (status, version or error)."""

    def __init__(self, url: str, key: str, body: bytes):
        self.url, self.key, self.body = url, key, body
        self.answers: list[list] = [[] for _ in range(CLIENTS)]
        self.probabilities: dict[int, list[float]] = {}
        self.stopping = threading.Event()
        self.threads = [threading.Thread(target=self._client, args=(i,), daemon=True) for i in range(CLIENTS)]
        for t in self.threads:
            t.start()

    def _client(self, i: int):
        host, port = self.url.split("//")[1].split("/")[0].split(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=60)
        try:
            self._send(i, conn)
        finally:
            conn.close()

    def _send(self, i: int, conn):
        while not self.stopping.is_set():
            try:
                status, answer, _ = request(self.url, self.body, "image/png", key=self.key, connection=conn)
            except OSError as e:
                self.answers[i].append((0, repr(e)))
                conn.close()
                continue
            if status == 200:
                self.answers[i].append((200, answer["version"]))
                self.probabilities[answer["version"]] = [answer["predictions"][0]["probabilities"][c] for c in answer["classes"]]
            else:
                self.answers[i].append((status, answer))

    def each_saw(self, version: int, times: int) -> bool:
        return all(sum(1 for s, v in a if s == 200 and v == version) >= times for a in self.answers)

    def stop(self):
        self.stopping.set()
        for t in self.threads:
            t.join(60)


@pytest.mark.production
def test_a_version_switch_under_load_fails_no_request_and_moves_the_answers_to_the_new_version(serving, transactional_db, users, models):
    v1 = register(users["owner"], models[0], "switch")
    register(users["owner"], models[1], "switch", number=2, registered=v1.model)
    e = deploy(v1, "switch")
    serving.wait_serving(e)
    image = png(seed=20)
    hammer = Hammer(score_url(serving, e), e.primary_key, image)
    try:
        wait_until(lambda: hammer.each_saw(1, 3), what="every client scoring on version 1")
        owner = Client()
        owner.force_login(users["owner"])  # the switch as the page and scripts make it: the API
        r = owner.patch(f"/api/endpoints/{e.name}", {"version": 2}, content_type="application/json")
        assert r.status_code == 200, r.content
        e.refresh_from_db()
        assert e.version.version == 2
        serving.wait_serving(e)
        wait_until(lambda: hammer.each_saw(2, 3), what="every client scoring on version 2")
    finally:
        hammer.stop()
    failed = [a for answers in hammer.answers for a in answers if a[0] != 200]
    assert failed == [], failed[:5]
    for answers in hammer.answers:  # a client's answers move from version 1 to 2, never back
        versions = [v for _, v in answers]
        assert versions == sorted(versions) and versions[0] == 1 and versions[-1] == 2
    for number, model in ((1, models[0]), (2, models[1])):
        assert np.allclose(hammer.probabilities[number], model.torch_probabilities(image), atol=1e-5, rtol=0)


@pytest.mark.production
def test_two_replicas_behind_one_port_both_serve_and_go_away_when_stopped(transactional_db, users, models):
    e = deploy(register(users["owner"], models[0], "replicated"), "replicated")
    two = Serving(TEST_DATA, replicas=2)
    try:
        names = {r.name for r in two.wait_up().replicas(e, 2)}
        served_by, lock = set(), threading.Lock()
        body, content_type = multipart([("image", "x.png", png(seed=21))])

        def client():  # a new connection per request: each is accepted by whichever replica is free
            for _ in range(100):
                status, answer, headers = request(score_url(two, e), body, content_type, key=e.primary_key)
                assert status == 200, answer
                with lock:
                    served_by.add(headers["X-Served-By"])
                    if served_by >= names:
                        return

        threads = [threading.Thread(target=client) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert served_by == names and len(names) == 2
        wait_until(lambda: {s.replica for s in EndpointStats.objects.filter(endpoint=e)} == names, what="both replicas' stats rows")
    finally:
        two.stop()
    assert not ServingReplica.objects.filter(name__in=names).exists()  # each removed its row on the way out


@pytest.mark.production
def test_counts_latencies_and_refused_requests_reach_the_endpoint_page(serving, endpoint):
    url, key, good = score_url(serving, endpoint), endpoint.primary_key, png(seed=22)
    for _ in range(5):
        assert request(url, good, "image/png", key=key)[0] == 200
    assert request(url, *multipart([("image", "notes.txt", b"plain text")]), key=key)[0] == 400
    for _ in range(KEEP_ERRORS + 4):
        assert request(url, good, "image/png", key="wrong")[0] == 401
    total, errors = 5 + 1 + KEEP_ERRORS + 4, 1 + KEEP_ERRORS + 4

    def counted():
        return EndpointStats.objects.filter(endpoint=endpoint, requests=total).exists()

    wait_until(counted, what=f"{total} requests counted")
    row = EndpointStats.objects.get(endpoint=endpoint)
    assert (row.replica.split(":")[-1], row.errors, latency.count(row.latency)) == (str(serving.proc.pid), errors, 5)
    figures = endpoint_pages.figures(endpoint)
    assert (figures["requests"], figures["errors"]) == (total, errors) and 0 < figures["p50_ms"] <= figures["p95_ms"]
    recent = list(EndpointError.objects.filter(endpoint=endpoint))
    assert len(recent) == KEEP_ERRORS  # the most recent kept
    assert all(r.status == 401 and "wrong key for endpoint 'digits'" in r.message for r in recent)
    replica = ServingReplica.objects.get(name=row.replica)
    assert replica.loaded["digits"] == {"version": endpoint.version_id, "revision": endpoint.revision, "error": ""}
