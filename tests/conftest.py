"""Test environment: set before Django loads its settings (pytest-django then sets Django up).

Tests that need a worker start real Celery workers (`celery_worker` fixture) on the same
database and broker as the test process: SQLite + SQLite broker by default, PostgreSQL + Redis
when `make test` runs the `production` tests with DATABASE_URL and CELERY_BROKER_URL set.
"""
import atexit
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# one folder per test session: engineers (and CI's two passes) may run tests side by side
(ROOT / "var").mkdir(exist_ok=True)
TEST_DATA = Path(tempfile.mkdtemp(prefix="test-", dir=ROOT / "var"))
atexit.register(shutil.rmtree, TEST_DATA, ignore_errors=True)
os.environ.setdefault("DESIGNER_EXTRA_MODULES", "tests.toy_modules")
os.environ.setdefault("DESIGNER_DATA_DIR", str(TEST_DATA))
os.environ.setdefault("ARTIFACT_ROOT", str(TEST_DATA / "artifacts"))
os.environ.setdefault("HEARTBEAT_SECONDS", "0.5")
os.environ.setdefault("LOST_AFTER_SECONDS", "4")
os.environ["DJANGO_SETTINGS_MODULE"] = "designer.settings"

from django.conf import settings  # noqa: E402

settings.DATABASES  # noqa: B018 - load settings now; pytest-django sets Django up next


@pytest.fixture(scope="session", autouse=True)
def _empty_queue():
    from designer.celery import app

    app.control.purge()  # tasks left in a shared broker (Redis) by an earlier session
    yield


@pytest.fixture(scope="session", autouse=True)
def _disconnect_others_before_dropping_the_test_database(django_db_setup, django_db_blocker):
    """Worker processes and async test threads may still hold PostgreSQL sessions at the end."""
    yield
    from django.db import connection

    if connection.vendor == "postgresql":
        with django_db_blocker.unblock(), connection.cursor() as c:
            c.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                      "WHERE datname = current_database() AND pid <> pg_backend_pid()")


@pytest.fixture
def users(db):
    from django.contrib.auth import get_user_model

    User = get_user_model()
    return {name: User.objects.create_user(name) for name in ("owner", "collaborator", "stranger")}


@pytest.fixture
def owner_client(client, users):
    client.force_login(users["owner"])
    return client


@pytest.fixture
def stranger_client(users):
    from django.test import Client

    c = Client()
    c.force_login(users["stranger"])
    return c


def worker_database_url() -> str:
    from django.db import connection

    s = connection.settings_dict
    if s["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{s['NAME']}"
    return f"postgres://{s['USER']}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


class CeleryWorker:
    """A real `celery worker` process on the test database."""

    def __init__(self, name: str, concurrency: int = 2, extra_env: dict | None = None):
        self.name = name
        self.hostname = f"{name}@{socket.gethostname()}"
        self.log_path = TEST_DATA / f"worker-{name}.log"
        env = {**os.environ, "DATABASE_URL": worker_database_url(), **(extra_env or {})}
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "designer.celery", "worker", "-c", str(concurrency), "-n", self.hostname,
                 "-l", "warning", "--without-mingle", "--without-gossip"],
                cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def wait_ready(self, timeout=60):
        from designer.pipelines.models import Worker

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"worker {self.name} exited: {self.log()}")
            if Worker.objects.filter(hostname=self.hostname).exists():
                return self
            time.sleep(0.2)
        raise TimeoutError(f"worker {self.name} not ready after {timeout} s: {self.log()}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-3000:]

    def kill(self):
        """As if the machine died: every process of the worker, at once, no clean-up."""
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.kill()


@pytest.fixture
def start_worker(transactional_db):
    started = []

    def start(name="w1", concurrency=2, wait=True, **kw):
        w = CeleryWorker(name, concurrency, **kw)
        started.append(w)
        return w.wait_ready() if wait else w

    yield start
    for w in started:
        w.stop()


@pytest.fixture(scope="module")
def shared_worker(django_db_setup, django_db_blocker):
    """One worker for a whole test module (starting one costs a few seconds)."""
    with django_db_blocker.unblock():
        w = CeleryWorker("shared", concurrency=2)
        w.wait_ready()
    yield w
    w.stop()


def wait_for_run(run_id, timeout=60, until=None):
    from designer.pipelines.models import Run

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = Run.objects.get(pk=run_id)
        if (until(run) if until else run.finished):
            return run
        time.sleep(0.1)
    statuses = {nr.node_id: nr.status for nr in Run.objects.get(pk=run_id).nodes.all()}
    raise TimeoutError(f"run {run_id} still {run.status} after {timeout} s: {statuses}")
