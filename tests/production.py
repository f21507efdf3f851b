"""The production recipe (docs/how-to/production.md), run for tests on the test database and the environment's broker
and channel layer: collectstatic, migrate, ensure_admin, daphne with DEBUG off, Celery workers with
the same variables. The commands are read from that page itself (`recipe`), so that the two cannot
drift apart. Used by tests/e2e/test_production.py and tests/accounts/test_signin_and_pool.py."""
import os
import shlex
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


def recipe(program: str) -> list[list[str]]:
    """The commands of the production recipe (docs/how-to/production.md) that run `program` (`manage.py`, `daphne`,
    `celery`), word for word after the interpreter, their comments cut."""
    section = (ROOT / "docs" / "how-to" / "production.md").read_text()
    commands = [shlex.split(line.split(" #", 1)[0]) for line in map(str.strip, section.splitlines())
                if line.startswith(".venv/bin/python ")]
    found = [c[1:] for c in commands if program in c[1:3]]
    assert found, f"docs/how-to/production.md's recipe has no {program} command"
    return found


class Daphne(servers.Daphne):
    """daphne as the README's recipe starts it (`--proxy-headers` included), with the production
    variables, on a port of this suite's share."""

    def __init__(self, name="production", **extra_env):
        super().__init__(production_env(**extra_env), name=f"daphne-{name}", ports=PORTS)

    def command(self) -> list[str]:
        (args,) = recipe("daphne")
        args[args.index("-p") + 1] = str(self.port)
        return [sys.executable, *args]


def production_worker(name: str, concurrency: int | None = None) -> CeleryWorker:
    """A worker with the production variables: the README recipe's command (its concurrency included)
    under this worker's name, or this suite's own command with `concurrency` processes."""
    args = None
    if concurrency is None:
        args = recipe("celery")[0]
        args[args.index("-n") + 1] = "{hostname}"
    return CeleryWorker(name, concurrency or 1, log_dir=TEST_DATA, extra_env={"DEBUG": "false", "SECRET_KEY": SECRET_KEY},
                        args=args)


class Maintenance:
    """The recipe's `manage.py maintenance` (the periodic work as a process of its own), with the
    production variables."""

    def __init__(self, args: list[str]):
        self.log_path = TEST_DATA / "maintenance-production.log"
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen([sys.executable, *args], cwd=ROOT, env=production_env(), stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()  # it gives its lease up and ends
            self.proc.wait(30)
