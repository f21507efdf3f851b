"""A real daphne (HTTP + websockets) serving the app to tests, in a process of its own."""
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

from tests.conftest import ROOT, TEST_DATA


def free_port(ports=None) -> int:
    """A free port: any (the system's choice), or the first free one of `ports` (a suite's share;
    pytest-xdist's processes each take every 8th of them, so that two never choose the same one)."""
    from tests.conftest import XDIST_INDEX

    for port in list(ports)[XDIST_INDEX % 8::8] if ports else [0]:
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return s.getsockname()[1]
    raise RuntimeError(f"no free port in {ports}")


class Daphne:
    """`daphne -b 127.0.0.1 -p PORT designer.asgi:application` with the environment `env`
    (a variable set to None is left unset)."""

    def __init__(self, env: dict, name: str = "daphne", port: int | None = None, ports=None):
        self.port = port or free_port(ports)
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = TEST_DATA / f"{name}.log"
        env = {k: v for k, v in env.items() if v is not None and k != "DJANGO_ALLOW_ASYNC_UNSAFE"}
        with self.log_path.open("ab") as log:  # the child keeps its own copy of the descriptor
            self.proc = subprocess.Popen(self.command(), cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                                         start_new_session=True)

    def command(self) -> list[str]:
        return [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(self.port), "designer.asgi:application"]

    def wait_ready(self, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"daphne exited: {self.log()}")
            try:
                urllib.request.urlopen(self.url + "/accounts/login/", timeout=2).read()
                return self
            except (OSError, urllib.error.HTTPError):
                time.sleep(0.2)
        raise TimeoutError(f"daphne not ready after {timeout} s: {self.log()}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-3000:]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
