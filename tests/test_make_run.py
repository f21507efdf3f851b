"""`make run` on embedded defaults starts the web app, a worker and the scoring endpoints' serving
process, prints the URL, and Ctrl-C (the terminal's SIGINT to its process group) stops all three,
leaving no process behind."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from tests.conftest import ROOT
from tests.servers import free_port


def answer(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def wait(check, what: str, proc, timeout: float = 180):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"make run exited ({proc.returncode}) before {what}"
        try:
            if result := check():
                return result
        except OSError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"make run: no {what} in {timeout} s")


def _signal_state() -> str:
    """This process's ignored and blocked signals (what a child inherits across exec)."""
    lines = Path("/proc/self/status").read_text().splitlines()
    return "; ".join(line for line in lines if line.startswith(("SigBlk", "SigIgn")))


def _as_from_a_terminal() -> None:
    """`make run` starts as from a shell: Ctrl-C and the stop signals neither ignored nor blocked.
    A signal ignored when a non-interactive shell starts cannot be trapped there (POSIX), and the
    test process's own state after a long session (a library's handler, a blocked mask) must not
    decide whether Ctrl-C stops the recipe."""
    for sig in (signal.SIGINT, signal.SIGQUIT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, set())


def test_make_run_starts_the_web_app_a_worker_and_the_serving_process(tmp_path):
    port, serving_port = free_port(), free_port()
    env = {**{k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "CHANNEL_LAYER_URL",
                                                               "ARTIFACT_ROOT", "DJANGO_SETTINGS_MODULE", "SECRET_KEY")},
           "DESIGNER_DATA_DIR": str(tmp_path / "var"), "DESIGNER_EXTRA_MODULES": ""}
    log = tmp_path / "make-run.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(["make", "--no-print-directory", "run", f"PORT={port}", f"SERVING_PORT={serving_port}"],
                                cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                preexec_fn=_as_from_a_terminal)
    try:
        wait(lambda: f"Pipeline Designer: http://127.0.0.1:{port}/" in log.read_text(), "URL printed", proc)
        status, _ = wait(lambda: answer(f"http://127.0.0.1:{port}/accounts/login/"), "web app", proc)
        assert status == 200
        status, body = wait(lambda: answer(f"http://127.0.0.1:{serving_port}/healthz"), "serving process", proc)
        assert status == 200 and json.loads(body)["endpoints"] == {} and json.loads(body)["ready"] is True
        status, body = answer(f"http://127.0.0.1:{port}/api/endpoints/x/score")  # GET: not the web app's to answer
        assert status == 405
        assert "sign in as admin" in log.read_text()
        # the worker registered itself: the web app lists it (the embedded broker, SQLite)
        wait(lambda: b"local@" in subprocess.run(
            [str(ROOT / ".venv/bin/python"), "-c", "import django,os;django.setup();from designer.pipelines.models import Worker;"
             "print([w.hostname for w in Worker.objects.filter(stopped_at__isnull=True)])"],
            cwd=ROOT, env={**env, "DJANGO_SETTINGS_MODULE": "designer.settings"}, capture_output=True).stdout, "worker", proc)
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    # nothing is left: no port answers, no process of this data folder runs (the worker and its
    # pool's processes included: they once hung for good in the worker's exit)
    for p in (port, serving_port):
        deadline = time.monotonic() + 30
        while listening(p):
            assert time.monotonic() < deadline, f"port {p} still answers 30 s after Ctrl-C"
            time.sleep(0.2)
    deadline = time.monotonic() + 30
    while left := processes_of(env["DESIGNER_DATA_DIR"]):
        assert time.monotonic() < deadline, f"still running 30 s after Ctrl-C: {left} (test process: {_signal_state()})"
        time.sleep(0.2)


def processes_of(data_dir: str) -> list[str]:
    """Command lines of the processes started with DESIGNER_DATA_DIR=data_dir."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if f"DESIGNER_DATA_DIR={data_dir}".encode() in (proc / "environ").read_bytes().split(b"\0"):
                found.append((proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
        except OSError:  # gone meanwhile, or not ours to read
            pass
    return found


def listening(port: int) -> bool:
    try:
        answer(f"http://127.0.0.1:{port}/")
        return True
    except OSError:
        return False
