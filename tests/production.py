"""The README's production recipe, run for tests on the test database and the environment's broker
and channel layer: collectstatic, migrate, daphne with DEBUG off, Celery workers with the same
variables. Used by tests/e2e/test_production.py and tests/pipelines/test_signin_and_pool.py."""
import os
import subprocess
import sys

from django.conf import settings

from tests import servers
from tests.conftest import ROOT, TEST_DATA
from tests.workers import CeleryWorker, worker_database_url

# the test process's key (tests/conftest.py: 50+ characters, as settings.py demands with DEBUG off):
# it signs the sessions the tests make, which the server must accept
SECRET_KEY = settings.SECRET_KEY
STATIC_ROOT = TEST_DATA / "collected-static"
PORTS = range(17100, 17200)  # this suite's share of the machine's ports


def production_env(**extra) -> dict:
    """The README's production variables (HTTP here: SECURE_HTTPS stays off on the loopback)."""
    env = {**os.environ, "DEBUG": "false", "SECRET_KEY": SECRET_KEY, "ALLOWED_HOSTS": "127.0.0.1,localhost",
           "DATABASE_URL": worker_database_url(), "STATIC_ROOT": str(STATIC_ROOT), **extra}
    env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    return {k: v for k, v in env.items() if v is not None}  # None: leave the variable unset


def manage(*args, env=None, timeout=300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env or production_env(),
                          capture_output=True, text=True, timeout=timeout)


class Daphne(servers.Daphne):
    """`daphne -b 127.0.0.1 -p PORT designer.asgi:application` with the production variables."""

    def __init__(self, name="production", **extra_env):
        super().__init__(production_env(**extra_env), name=f"daphne-{name}", ports=PORTS)


def production_worker(name: str, concurrency: int = 1) -> CeleryWorker:
    return CeleryWorker(name, concurrency, log_dir=TEST_DATA, extra_env={"DEBUG": "false", "SECRET_KEY": SECRET_KEY})
