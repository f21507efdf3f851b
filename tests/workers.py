"""Real Celery worker processes for tests and benchmarks, on the caller's database and broker."""
import os
import signal
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def worker_database_url() -> str:
    from django.db import connection

    s = connection.settings_dict
    if s["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{s['NAME']}"
    return f"postgres://{s['USER']}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


class CeleryWorker:
    """A real `celery worker` process on the test database."""

    def __init__(self, name: str, concurrency: int = 2, log_dir: Path = Path("."), extra_env: dict | None = None,
                 args: list[str] | None = None):
        """`args`: the whole command after the interpreter instead of this suite's own (`{hostname}` is
        filled in with the worker's name)."""
        self.name = name
        self.hostname = f"{name}@{socket.gethostname()}"
        self.log_path = Path(log_dir) / f"worker-{name}.log"
        self.started_at = datetime.now(UTC)
        # its torch threads: its own share of the cores (designer/pipelines/heartbeat.py), not the test process's one
        env = {**{k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}, "DATABASE_URL": worker_database_url(),
               **(extra_env or {})}
        with self.log_path.open("ab") as log:
            args = [a.replace("{hostname}", self.hostname) for a in args] if args else [
                "-m", "celery", "-A", "designer.celery", "worker", "-c", str(concurrency), "-n", self.hostname,
                "-l", "warning", "--without-mingle", "--without-gossip"]
            self.proc = subprocess.Popen(
                [sys.executable, *args],
                cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def wait_ready(self, timeout=60):
        from designer.pipelines.models import Worker

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"worker {self.name} exited: {self.log()}")
            # its own heartbeat: a row of an earlier worker of this name stays, marked stopped
            if Worker.objects.filter(hostname=self.hostname, stopped_at__isnull=True, last_seen__gte=self.started_at).exists():
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
        """A warm shutdown, as `celery worker` gets it from a service manager: TERM to the main
        process only (its pool's processes, signalled too, may die holding the pool's queue lock,
        and the main process then hangs in its exit), then anything left is killed."""
        self.ask_to_stop()
        self.end()

    def ask_to_stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()

    def end(self, within: float = 20):
        try:
            self.proc.wait(within)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # a pool process or a rank that outlived it
        except ProcessLookupError:
            pass
        self.proc.wait()


class MaintenanceProcess:
    """`manage.py maintenance` (the maintenance loop as a process of its own, as `make run`
    starts it beside its worker) on the test database; `extra_env` adds to the caller's environment."""

    def __init__(self, name: str, log_dir: Path = Path("."), extra_env: dict | None = None):
        self.name = name
        # its torch threads: its own share of the cores (designer/pipelines/heartbeat.py), not the test process's one
        env = {**{k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}, "DATABASE_URL": worker_database_url(),
               **(extra_env or {})}
        env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        self.log_path = Path(log_dir) / f"maintenance-{name}.log"
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen([sys.executable, "manage.py", "maintenance", "--name", name], cwd=ROOT, env=env,
                                         stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def wait_holding(self, timeout: float = 60) -> "MaintenanceProcess":
        """Once it holds the lease (at once, or once the last holder's lapsed)."""
        from designer.pipelines import maintenance

        deadline = time.monotonic() + timeout
        while maintenance.holder_now() != self.name:
            if self.proc.poll() is not None:
                raise RuntimeError(f"maintenance {self.name} exited: {self.log_path.read_text(errors='replace')[-3000:]}")
            assert time.monotonic() < deadline, f"{self.name} never took the maintenance lease (held by {maintenance.holder_now()})"
            time.sleep(0.1)
        return self

    def end(self, sig: int = signal.SIGTERM) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(30)


def stop_all(workers: list[CeleryWorker]) -> None:
    """Stop every worker at once (a warm shutdown takes seconds each)."""
    for w in workers:
        w.ask_to_stop()
    for w in workers:
        w.end()


def all_ready(workers: list[CeleryWorker]) -> list[CeleryWorker]:
    """Every one of `workers` ready; if one is not, all of them are stopped before the error goes
    on (a worker left running would take the next tests' tasks)."""
    try:
        return [w.wait_ready() for w in workers]
    except BaseException:
        stop_all(workers)
        raise


def registered(workers: list[CeleryWorker], timeout: float = 30) -> list[CeleryWorker]:
    """`workers`, once each has its live row again (a test's database flush removes the rows
    until the workers' next heartbeat)."""
    from designer.pipelines.models import Worker

    deadline = time.monotonic() + timeout
    while Worker.objects.filter(hostname__in=[w.hostname for w in workers], stopped_at__isnull=True).count() < len(workers):
        assert time.monotonic() < deadline, "the workers did not register"
        time.sleep(0.1)
    return workers


class KeptWorkers:
    """Workers kept from one test module to the next ones that use them (a start and stop costs
    about 10 s): a fixture marked with `kept("name")` (tests/conftest.py) gets its workers from here.
    They are stopped before the first test that uses them neither itself nor after an earlier test
    of its module (as a module's own fixture would be), and at the end of the session."""

    def __init__(self):
        self._kept: dict[str, tuple[object, list[CeleryWorker]]] = {}

    def get(self, key: str, start):
        """`start()`'s workers (one or a list), started once while they are kept; again if one exited."""
        if key in self._kept and any(w.proc.poll() is not None for w in self._kept[key][1]):
            stop_all(self._kept.pop(key)[1])
        if key not in self._kept:
            value = start()
            self._kept[key] = (value, list(value) if isinstance(value, list | tuple) else [value])
        return self._kept[key][0]

    def keep_only(self, keys) -> None:
        stop_all([w for key in [k for k in self._kept if k not in keys] for w in self._kept.pop(key)[1]])
