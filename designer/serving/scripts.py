"""An endpoint served by its entry script (the original's contract: `init()` once, `run(raw_data)`
per request, the return value answered as JSON), in a process of its own (script_host.py): one
model's code cannot break another endpoint, nor this process (a crash, sys.exit, a hang, a
global it changes, memory it takes are its process's).

The process starts when the endpoint is loaded (init() runs then; an init() that fails fails the
load, naming the script's line) with a clean environment: the system's variables a Python needs
(KEPT), AZUREML_MODEL_DIR (the version's folder, as the original sets it; `Model.get_model_path`
of azureml.core, sdk/compat, answers it), and none of this
process's settings (no SECRET_KEY, DATABASE_URL, broker URL). Requests go to it one at a time on
a thread of the endpoint's own (which starts the process, too). A run() that does not answer within `run_seconds` (setting
SERVING_SCRIPT_SECONDS) ends its process (504); a process that died answers 502 once and starts
again for the next request; at most `max_waiting` requests wait for it (503 beyond).
"""
from __future__ import annotations

import asyncio
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from designer.serving import script_host
from sdk import compat

HOST = Path(script_host.__file__)
KEPT = ("PATH", "HOME", "TMPDIR", "TMP", "TEMP", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "TZ", "USER", "LOGNAME",
        "OMP_NUM_THREADS", "MKL_NUM_THREADS", "CUDA_VISIBLE_DEVICES", "TORCH_HOME", "SSL_CERT_FILE", "SSL_CERT_DIR",
        "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy")
MAX_ANSWER_BYTES = 64 * 1024 * 1024
CLOSE_GRACE_SECONDS = 5.0


@dataclass(frozen=True)
class ScriptLimits:
    init_seconds: float  # for init() (SERVING_SCRIPT_INIT_SECONDS)
    run_seconds: float  # for one run() (SERVING_SCRIPT_SECONDS)
    max_waiting: int = 64  # requests waiting for the script


class TooLarge(Exception):
    """An answer over MAX_ANSWER_BYTES (not read: its process is ended)."""


class ScriptError(RuntimeError):
    """A request the script did not answer: the HTTP status and a message naming the endpoint."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


class ScriptDeployment:
    """An endpoint's entry script, loaded: `answer(text)` is its JSON answer (bytes)."""

    def __init__(self, endpoint: str, version_id: int, serves: tuple, folder: Path, source: str, script_name: str,
                 limits: ScriptLimits, label: tuple[str, int] = ("", 0)):
        self.endpoint, self.version_id, self.serves, self.label = endpoint, version_id, serves, label
        self.folder, self.limits = folder, limits
        self.calls = self.scored = 0  # GET /healthz shows them, as for an ONNX endpoint
        self.waiting = 0
        self.closed = False
        self.home = Path(tempfile.mkdtemp(prefix=f"entry-script-{endpoint}-"))
        self.script = self.home / script_name
        self.script.write_text(source, encoding="utf-8")
        self.thread = ThreadPoolExecutor(1, f"script-{endpoint}")
        self.proc: subprocess.Popen | None = None
        # started on the endpoint's own thread, which lives as long as the deployment: the process
        # dies with the thread that started it (PR_SET_PDEATHSIG), not only with this process
        try:
            self.thread.submit(self._start).result()
        except BaseException:
            self.close(grace=0)
            raise

    # ------------------------------------------------------------------ on the event loop

    async def answer(self, text: str) -> bytes:
        if self.waiting >= self.limits.max_waiting:
            raise ScriptError(503, f"endpoint {self.endpoint!r} is busy: {self.waiting} requests are waiting for "
                                   f"its entry script; try again in a moment")
        self.waiting += 1
        try:
            return await asyncio.get_running_loop().run_in_executor(self.thread, self._exchange, text)
        except RuntimeError as e:  # closed: replaced by another script or version, or deleted, a moment ago
            if not self.closed:
                raise
            raise ScriptError(503, f"endpoint {self.endpoint!r} changed while the request came: send it again") from e
        finally:
            self.waiting -= 1

    def close(self, grace: float = CLOSE_GRACE_SECONDS) -> None:
        """After `grace` seconds (a request that took this deployment just before it was replaced
        is still answered by it), and once the requests under way are answered (they are before it
        on the thread), the process ends."""
        if grace <= 0:
            self._close_now()
            return
        timer = threading.Timer(grace, self._close_now)
        timer.daemon = True
        timer.start()

    def _close_now(self) -> None:
        self.closed = True
        self.thread.submit(self._stop)
        self.thread.shutdown(wait=False)

    # ------------------------------------------------------------------ on the endpoint's thread

    def _exchange(self, text: str) -> bytes:
        if self.proc is None or self.proc.poll() is not None:
            try:
                self._start()
            except ScriptError as e:
                raise ScriptError(503, f"{e} (starting its process again)") from None
        deadline = time.monotonic() + self.limits.run_seconds
        try:
            self._write(text.encode("utf-8"), deadline)
            reply = json.loads(self._read(deadline))
        except TimeoutError:
            self._kill()
            raise ScriptError(504, f"endpoint {self.endpoint!r}: run() of {self.script.name} did not answer within "
                                   f"{self.limits.run_seconds:g} s (setting SERVING_SCRIPT_SECONDS); its process was "
                                   "ended and starts again for the next request") from None
        except TooLarge as e:
            self._kill()
            raise ScriptError(502, f"endpoint {self.endpoint!r}: run() of {self.script.name} answered {e}; its process "
                                   "was ended and starts again for the next request") from None
        except (EOFError, BrokenPipeError, OSError, ValueError) as e:
            code = self._kill()
            raise ScriptError(502, f"endpoint {self.endpoint!r}: the process of {self.script.name} ended while "
                                   f"answering ({_ended(code, e)}); it starts again for the next request") from None
        self.calls += 1
        self.scored += 1
        if "error" in reply:  # run() raised (500), or answered AMLResponse(message, 4xx/5xx)
            raise ScriptError(reply.get("status", 500), f"endpoint {self.endpoint!r}: {reply['error']}")
        return reply["answer"].encode()

    def _start(self) -> None:
        env = {k: v for k, v in os.environ.items() if k in KEPT or k.startswith("LC_")}
        env.update({"AZUREML_MODEL_DIR": str(self.folder), "AZUREML_ENTRY_SCRIPT": self.script.name,
                    "PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1",
                    # the original's `from azureml.core.model import Model` (sdk/compat): Model.get_model_path
                    "PYTHONPATH": os.pathsep.join(compat.search_path()),
                    # the original's scripts load whole models saved by torch.save (torch.load's default before 2.6)
                    "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1"})
        self.proc = subprocess.Popen([sys.executable, str(HOST), str(self.script)], cwd=self.home, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True)
        for stream in (self.proc.stdin, self.proc.stdout):
            os.set_blocking(stream.fileno(), False)
        try:
            reply = json.loads(self._read(time.monotonic() + self.limits.init_seconds))
        except TimeoutError:
            self._kill()
            raise ScriptError(503, f"endpoint {self.endpoint!r}: init() of {self.script.name} did not finish within "
                                   f"{self.limits.init_seconds:g} s (setting SERVING_SCRIPT_INIT_SECONDS)") from None
        except (EOFError, OSError, ValueError) as e:
            code = self._kill()
            raise ScriptError(503, f"endpoint {self.endpoint!r}: the process of {self.script.name} ended before "
                                   f"init() finished ({_ended(code, e)})") from None
        if "error" in reply:
            self._kill()
            raise ScriptError(503, f"endpoint {self.endpoint!r}: {reply['error']}")

    def _write(self, data: bytes, deadline: float) -> None:
        view = memoryview(script_host.HEADER.pack(len(data)) + data)
        fd = self.proc.stdin.fileno()
        while view:
            if not select.select([], [fd], [], _left(deadline))[1]:
                raise TimeoutError
            try:
                view = view[os.write(fd, view):]
            except BlockingIOError:
                continue

    def _read(self, deadline: float) -> bytes:
        header = self._exactly(script_host.HEADER.size, deadline)
        size = script_host.HEADER.unpack(header)[0]
        if size > MAX_ANSWER_BYTES:
            raise TooLarge(f"{size / 2**20:.0f} MB, more than the {MAX_ANSWER_BYTES // 2**20} MB an answer may be")
        return self._exactly(size, deadline)

    def _exactly(self, n: int, deadline: float) -> bytes:
        fd, data = self.proc.stdout.fileno(), bytearray()
        while len(data) < n:
            if not select.select([fd], [], [], _left(deadline))[0]:
                raise TimeoutError
            try:
                chunk = os.read(fd, n - len(data))
            except BlockingIOError:
                continue
            if not chunk:
                raise EOFError("no answer")
            data += chunk
        return bytes(data)

    def _kill(self) -> int | None:
        """End the script's process and whatever it started (its session); its exit code."""
        proc, self.proc = self.proc, None
        if proc is None:
            return None
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        code = proc.wait()
        for stream in (proc.stdin, proc.stdout):
            try:
                stream.close()
            except OSError:
                pass
        return code

    def _stop(self) -> None:
        self._kill()
        shutil.rmtree(self.home, ignore_errors=True)


def _left(deadline: float) -> float:
    return max(0.0, deadline - time.monotonic())


def _ended(code: int | None, error: Exception) -> str:
    if code is not None and code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}" if code is not None else str(error) or type(error).__name__
