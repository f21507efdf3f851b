"""Sign-in throttling (django-axes) on the sign-in page and /admin, and PostgreSQL connections
held by the web app under sixty simultaneous submits (Django's psycopg pool)."""
import http.client
import io
import json
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db.models import F
from django.test import Client
from django.utils.crypto import get_random_string

from designer.pipelines.models import Pipeline, Run
from tests.conftest import wait_for_run
from tests.pipes import node, pipeline
from tests.workers import worker_database_url

PASSWORD = "the-right-password-1"
LIMIT = settings.AXES_FAILURE_LIMIT


def sign_in(client, username, password, url="/accounts/login/"):
    return client.post(url, {"username": username, "password": password, "next": "/"})


@pytest.fixture(autouse=True)
def _quick_hashes(settings):
    """Each wrong password costs a full hash otherwise (a second on a busy machine): throttling is under test."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def alice(db):
    return get_user_model().objects.create_user("alice", password=PASSWORD, is_staff=True, is_superuser=True)


def test_the_sign_in_page_says_a_lock_is_coming_then_locks_and_says_for_how_long(alice):
    client = Client()
    for i in range(LIMIT - 1):
        r = sign_in(client, "alice", f"wrong-{i}")
        assert r.status_code == 200
        assert "did not match" in r.text
        assert f"After {LIMIT} wrong passwords in a row, signing in is locked for {settings.AXES_COOLOFF_MINUTES} minutes" in r.text
    # forty wrong passwords in a row: from the limit on, none is tried any more
    answers = [sign_in(client, "alice", f"wrong-{i}") for i in range(LIMIT - 1, 40)]
    assert {r.status_code for r in answers} == {429}
    page = answers[-1].text
    assert "Sign-in locked" in page and f"locked for {settings.AXES_COOLOFF_MINUTES} minutes" in page
    assert "alice" in page and "axes_reset_username" in page
    # the right password is refused too while the lock holds, on the sign-in page and on /admin
    assert sign_in(client, "alice", PASSWORD).status_code == 429
    assert sign_in(client, "alice", PASSWORD, url="/admin/login/?next=/admin/").status_code == 429
    assert "_auth_user_id" not in client.session


def test_the_admin_sign_in_locks_too(alice):
    client = Client()
    answers = [sign_in(client, "alice", f"wrong-{i}", url="/admin/login/?next=/admin/").status_code for i in range(LIMIT + 2)]
    assert answers == [200] * (LIMIT - 1) + [429] * 3
    assert "Sign-in locked" in sign_in(client, "alice", PASSWORD, url="/admin/login/?next=/admin/").text


def test_a_lock_holds_one_user_name_only_and_an_administrator_lifts_it(alice):
    get_user_model().objects.create_user("bob", password=PASSWORD)
    client = Client()
    for i in range(LIMIT):
        sign_in(client, "alice", f"wrong-{i}")
    assert sign_in(client, "alice", PASSWORD).status_code == 429
    assert sign_in(Client(), "bob", PASSWORD).status_code == 302  # same address, another user
    call_command("axes_reset_username", "alice", stdout=io.StringIO())  # the README's command
    r = sign_in(client, "alice", PASSWORD)
    assert r.status_code == 302 and r["Location"] == "/"


def test_the_lock_ends_after_the_cool_off(alice):
    client = Client()
    for i in range(LIMIT):
        sign_in(client, "alice", f"wrong-{i}")
    assert sign_in(client, "alice", PASSWORD).status_code == 429
    # the cool-off passes: the failures are moved back in time by as much
    AccessAttempt.objects.update(attempt_time=F("attempt_time") - timedelta(minutes=settings.AXES_COOLOFF_MINUTES, seconds=1))
    assert sign_in(client, "alice", PASSWORD).status_code == 302


# ---------------------------------------------------------------- connection pooling

POOL_SIZE = 4
USERS = 5
SUBMITS = 60
APP_NAME = "designer-pool-test"  # psycopg (libpq) names the web app's connections from PGAPPNAME


def pg_connections(dsn: str, stop: threading.Event, seen: list[int]):
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        while not stop.is_set():
            seen.append(conn.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", [APP_NAME]).fetchone()[0])
            stop.wait(0.01)


def post_run(url_port: int, pipeline_id: int, session: str, start: threading.Barrier):
    csrf = get_random_string(32)
    conn = http.client.HTTPConnection("127.0.0.1", url_port, timeout=120)
    start.wait()
    conn.request("POST", f"/api/pipelines/{pipeline_id}/runs", body="{}",
                 headers={"Content-Type": "application/json", "X-CSRFToken": csrf,
                          "Cookie": f"sessionid={session}; csrftoken={csrf}"})
    r = conn.getresponse()
    body = r.read()
    conn.close()
    return r.status, body


@pytest.mark.production
@pytest.mark.skipif(not settings.DATABASES["default"]["ENGINE"].endswith("postgresql"), reason="pooling is for PostgreSQL (the production pass)")
def test_sixty_simultaneous_submits_by_five_users_are_all_accepted_on_a_bounded_pool(transactional_db):
    from tests.production import Daphne, production_worker

    web = Daphne("pool", DB_POOL_SIZE=str(POOL_SIZE), PGAPPNAME=APP_NAME)
    worker = production_worker("pool", concurrency=2)
    try:
        web.wait_ready()
        worker.wait_ready()
        people = []
        for i in range(USERS):
            user = get_user_model().objects.create_user(f"user{i}")
            c = Client()
            c.force_login(user)
            p = Pipeline.objects.create(owner=user, name=f"p{i}", draft=pipeline([node("src", "toy_source", value=i)], []))
            people.append((p.id, c.cookies["sessionid"].value))

        stop, seen = threading.Event(), []
        sampler = threading.Thread(target=pg_connections, args=(worker_database_url(), stop, seen))
        sampler.start()
        start = threading.Barrier(SUBMITS)
        with ThreadPoolExecutor(SUBMITS) as pool:
            futures = [pool.submit(post_run, web.port, *people[i % USERS], start) for i in range(SUBMITS)]
            answers = [f.result() for f in futures]
        stop.set()
        sampler.join()

        statuses = [status for status, _ in answers]
        assert statuses == [201] * SUBMITS, [(s, b[:200]) for s, b in answers if s != 201]
        assert 1 <= max(seen) <= POOL_SIZE, f"the web app held {max(seen)} PostgreSQL connections (pool of {POOL_SIZE})"
        print(f"\n{SUBMITS} submits by {USERS} users: all 201; at most {max(seen)} PostgreSQL connections of the web app "
              f"(DB_POOL_SIZE={POOL_SIZE}), {len(seen)} samples")
        run_ids = [json.loads(body)["id"] for _, body in answers]
        assert Run.objects.filter(pk__in=run_ids).count() == SUBMITS
        for run_id in run_ids:  # every run completes: nothing is left in the broker
            assert wait_for_run(run_id, timeout=180).status == "completed"
    finally:
        web.stop()
        worker.stop()
