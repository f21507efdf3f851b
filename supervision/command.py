"""Running the command of a component: one process here (`run`), or each process of a distributed
job (`python -m supervision.command --cwd DIR -- ARGV...`, under supervision.rank).

The command starts from a clean environment (`clean_environment`): what a script needs (PATH,
HOME and the temporary folder, the locale, PYTHONPATH for the SDK, the metrics and stop files,
torch.distributed's and CUDA's variables), never the worker's own (SECRET_KEY, DATABASE_URL, the
broker's and channel layer's URLs, any other setting).

`run` starts the command in a session of its own (its process group: the command and whatever it
starts), which dies with this process (PR_SET_PDEATHSIG), its stdout and stderr appended as they
are to the node's driver log (no event per line: a script may print a million). While it runs it
relays the metrics of the script (sdk.script.log_metric's JSON lines in the metrics file, and the
`##metric name=value ... [step=N]` lines of its output, parsed by sdk.formats.metrics.parse_line;
a figure without a step numbered as it comes, sdk.formats.metrics.Steps),
asks `check_cancelled()`, creates the stop file when `stop_requested()` says so, and watches the
timeout. A command asked to stop that still runs `stop_grace` seconds later is ended (its group,
as below; supervision/stopping.py) and counts as stopped, not failed: `run` returns how it stopped
(sdk.context.Stopped: it read the request and ended on its own, it was ended, or it ran its course
without reading it); its outputs keep what it wrote by then (they may be partial). However it
ends (finished, failed, cancelled, timed out, stopped, an error here), every process
of the group is ended (SIGTERM, a grace, SIGKILL) before `run` returns or raises; so is any
process that left the group (setsid, a daemon's double fork), also one that emptied its environment:
the command runs under supervision/reaper.py, a child subreaper to which such a process is given when
its parent ends, and which kills it when the command ends; as a second net each process carries the
command's COMMAND_ID_ENV in its environment, and every live process of this user that has it is killed.

No torch here: this runs in the Celery worker; the script imports what it needs.
"""
from __future__ import annotations

import ctypes
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from sdk import command_vars, compat
from sdk.context import STOP_GRACE_SECONDS as DEFAULT_STOP_GRACE
from sdk.context import Stopped
from sdk.errors import CommandFailed, CommandTimedOut, prefixed
from sdk.formats.metrics import Follower, Steps
from sdk.script import METRICS_FILE_ENV, STOP_FILE_ENV
from supervision.stopping import StopRequest

ROOT = Path(__file__).resolve().parent.parent
REAPER = Path(__file__).resolve().parent / "reaper.py"
STOP_GRACE_SECONDS = 5.0  # how long the processes have to leave after SIGTERM before they are killed
POLL_SECONDS = 0.1
TAIL_LINES = 20  # of the output, in the error of a command that failed
MAX_NOTES = 10  # malformed ##metric lines noted in the log, at most
MAX_TAIL_LINE = 500  # characters of a line of the tail (the error is stored and shown whole)


COMMAND_ID_ENV = "DESIGNER_COMMAND_ID"
# what a command's process gets of the worker's environment, by name (clean_environment)
KEPT = ("PATH", "HOME", "TMPDIR", "TMP", "TEMP", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "TZ", "USER", "LOGNAME",
        "PYTHONPATH", "PYTHONUNBUFFERED", METRICS_FILE_ENV, STOP_FILE_ENV, COMMAND_ID_ENV, compat.MLFLOW_MODELS_ENV,
        # torch.distributed's (torchrun's names too), the devices, the threads a rank may use
        "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "NODE_RANK", "GROUP_RANK", "GROUP_WORLD_SIZE",
        "ROLE_RANK", "ROLE_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "NODE_COUNT", "PROCESS_COUNT_PER_NODE",
        "CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS",
        "MKL_NUM_THREADS",
        # reaching the network as the machine does (certificates, proxies), torch's cache of weights
        "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY",
        "http_proxy", "https_proxy", "no_proxy", "TORCH_HOME")
KEPT_PREFIXES = ("TORCHELASTIC_", "NCCL_", "GLOO_", "LC_")


def clean_environment(extra: dict[str, str] | None = None, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment a command runs with: of `base` (default: this process's), only the
    variables KEPT or starting with KEPT_PREFIXES, then `extra` on top (which should hold
    only such variables too)."""
    base = os.environ if base is None else base
    env = {k: v for k, v in base.items() if k in KEPT or k.startswith(KEPT_PREFIXES)}
    return {**env, **(extra or {})}


def job_env(metrics_file: Path | None, stop_file: Path | None) -> dict[str, str]:
    """What a command runs with on top of clean_environment(): where sdk.script writes its
    metrics and looks for the stop request; on PYTHONPATH the original's logging APIs (sdk.compat:
    `from azureml.core import Run`, `import mlflow` where no real mlflow is installed), and nothing
    of the project: the SDK is installed (sdk/pyproject.toml), `from sdk import log_metric` works as is."""
    path = [*compat.search_path(), os.environ.get("PYTHONPATH")]
    env = {"PYTHONUNBUFFERED": "1", "PYTHONPATH": os.pathsep.join(filter(None, path))}
    if metrics_file is not None:
        env[METRICS_FILE_ENV] = str(metrics_file)
    if stop_file is not None:
        env[STOP_FILE_ENV] = str(stop_file)
    return env


def environment(metrics_file: Path | None = None, stop_file: Path | None = None) -> dict[str, str]:
    """job_env() and, for a single process, what torch.distributed reads (a world of one), so a
    script written for torchrun runs as it is."""
    return {**job_env(metrics_file, stop_file), "RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0", "NODE_RANK": "0",
            "NODE_COUNT": "1", "PROCESS_COUNT_PER_NODE": "1", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port())}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def python_argv(argv: list[str]) -> list[str]:
    """`python`/`python3` as the first word means this interpreter (the worker's environment)."""
    return [sys.executable, *argv[1:]] if argv and argv[0] in ("python", "python3") else list(argv)


def run(argv: list[str], cwd: Path, log_path: Path, *, env: dict[str, str] | None = None, timeout: float = 0.0,
        check_cancelled: Callable[[], None] = lambda: None, stop_requested: Callable[[], bool] = lambda: False,
        stop_file: Path | None = None, metrics_file: Path | None = None,
        on_metric: Callable[[str, float, int | None, int | None], None] | None = None, label: str = "",
        stop_grace: float = DEFAULT_STOP_GRACE) -> Stopped | None:
    """Run `argv` in `cwd` until it ends (see the module's docstring). `env`: on top of
    clean_environment() (default: environment(metrics_file, stop_file)); `timeout`: seconds, 0
    for none; `stop_grace`: seconds between the stop request and the end of the processes.
    Returns how it stopped when it was asked to (Stopped), else None. Raises CommandFailed
    (non-zero exit, or it could not start), CommandTimedOut, or what check_cancelled() raised
    (Cancelled)."""
    log_path = Path(log_path)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    watch = _Watch(log_path, metrics_file, on_metric)
    env = environment(metrics_file, stop_file) if env is None else env
    command_id = secrets.token_hex(16)
    env = clean_environment({**env, COMMAND_ID_ENV: command_id})
    try:
        argv = command_vars.expand(python_argv(argv), env)
    except command_vars.UnknownVariable as e:
        raise CommandFailed(prefixed(label, str(e))) from None
    with log_path.open("ab") as out:
        try:
            if sys.platform == "linux":  # what the command leaves behind ends with it: supervision/reaper.py
                _startable(argv, cwd, env)
                argv = [sys.executable, str(REAPER), *argv]
            proc = subprocess.Popen(argv, cwd=cwd, env=env,
                                    stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=_die_with(os.getpid()))
        except OSError as e:
            raise CommandFailed(prefixed(label, f"the command could not start: {argv[0] if argv else ''!r} "
                                                f"in {str(cwd)!r}: {e.strerror or e}")) from None
    stop = StopRequest(stop_file, stop_requested, stop_grace)
    try:
        code = _supervise(proc, watch, timeout, check_cancelled, stop)
    finally:
        end_group(proc)
        end_marked(command_id)
    watch.pump(final=True)
    if code is None:
        raise CommandTimedOut(prefixed(label, f"the command ran past its Timeout of {seconds(timeout)} s and was ended"))
    if code != 0 and not stop.ended:
        tail = watch.tail()
        raise CommandFailed(prefixed(label, f"the command {exit_text(code)}; the last lines of its output:\n{tail}"),
                            exit_code=code, tail=tail)
    return stop.outcome()


def _startable(argv: list[str], cwd: Path, env: Mapping[str, str]) -> None:
    """Raises the OSError that starting `argv` would (a program that is not there, or not executable)."""
    program = argv[0] if argv else ""
    found = (os.path.join(cwd, program) if os.sep in program else shutil.which(program, path=env.get("PATH", "")))
    if not found or not os.path.isfile(found):
        raise FileNotFoundError(2, "No such file or directory")
    if not os.access(found, os.X_OK):
        raise PermissionError(13, "Permission denied")


def _supervise(proc: subprocess.Popen, watch: _Watch, timeout: float, check_cancelled, stop: StopRequest) -> int | None:
    """Wait for the command, relaying its metrics; its exit code, or None when it timed out."""
    deadline = time.monotonic() + timeout if timeout and timeout > 0 else None
    while True:
        try:
            code = proc.wait(POLL_SECONDS)
        except subprocess.TimeoutExpired:
            code = None
        watch.pump()
        if code is not None:
            return code
        check_cancelled()
        if stop.overdue(watch.note):
            end_group(proc)
            return -signal.SIGKILL if proc.returncode is None else proc.returncode
        if deadline is not None and time.monotonic() > deadline:
            return None


def seconds(t: float) -> str:
    """A timeout as a user typed it: 90, 2.5 (not 90.0, nor 1e+06)."""
    return str(int(t)) if float(t).is_integer() else str(t)


def exit_text(code: int) -> str:
    if code >= 0:
        return f"exited with code {code}"
    try:
        name = f" ({signal.Signals(-code).name})"
    except ValueError:
        name = ""
    return f"was killed by signal {-code}{name}"


class _Watch:
    """The metrics in the command's output and metrics file, as they are appended."""

    def __init__(self, log_path: Path, metrics_file: Path | None, on_metric):
        self.log_path = log_path
        self.steps = Steps()  # a figure logged without a step is numbered as it comes
        self.start = _size(log_path)
        self.log = Follower(log_path, self.start)
        self.metrics = Follower(metrics_file, _size(metrics_file)) if metrics_file else None
        self.on_metric = on_metric or (lambda *a: None)
        self.notes = 0

    def pump(self, final: bool = False) -> None:
        for _line, figures in self.log.metric_lines(final):
            if isinstance(figures, ValueError):
                if self.notes < MAX_NOTES:
                    self.notes += 1
                    self.note(f"(designer) line ignored: {figures}")
                continue
            for m in figures:
                self.on_metric(m["name"], m["value"], self.steps(m["name"], m["step"]), m["steps"])
        if self.metrics is not None:
            for m in self.metrics.metrics(final):
                self.on_metric(m["name"], m["value"], self.steps(m["name"], m["step"]), m["steps"])

    def note(self, text: str) -> None:
        with self.log_path.open("a", encoding="utf-8") as f:
            f.write(text + "\n")

    def tail(self, lines: int = TAIL_LINES) -> str:
        """The last lines the command wrote (not what was in the log before it)."""
        with self.log_path.open("rb") as f:
            end = f.seek(0, os.SEEK_END)
            f.seek(max(self.start, end - 64 * 1024))
            text = f.read().decode(errors="replace")
        return "\n".join(line if len(line) <= MAX_TAIL_LINE else line[:MAX_TAIL_LINE] + " [...]"
                         for line in text.rstrip().splitlines()[-lines:])


def _size(path: Path | None) -> int:
    try:
        return Path(path).stat().st_size if path else 0
    except OSError:
        return 0


# ---------------------------------------------------------------- the process group


def _die_with(parent: int):
    def die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
        if sys.platform == "linux":
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
            if os.getppid() != parent:  # the worker died before the line above
                os._exit(1)

    return die_with_parent


def group_members(pgid: int) -> list[int]:
    """The live processes (not zombies) of process group `pgid`."""
    if sys.platform != "linux":
        try:
            os.killpg(pgid, 0)
            return [pgid]
        except (ProcessLookupError, PermissionError):
            return []
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                stat = Path(entry.path, "stat").read_text()
            except OSError:
                continue  # gone
            fields = stat[stat.rindex(")") + 2:].split()  # the name in brackets may hold spaces
            if fields[0] not in ("Z", "X") and int(fields[2]) == pgid:
                found.append(int(entry.name))
    return found


def end_group(proc: subprocess.Popen, grace: float | None = None) -> None:
    """End the command and every process of its group (SIGTERM, then SIGKILL after `grace`
    seconds, default STOP_GRACE_SECONDS); return when none is left. Safe to call when they have
    all ended already."""
    grace = STOP_GRACE_SECONDS if grace is None else grace
    pgid = proc.pid  # start_new_session: the command leads its group; the id stays while a member lives
    if proc.poll() is not None and not group_members(pgid):
        return
    _killpg(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if proc.poll() is not None and not group_members(pgid):
            return
        time.sleep(0.05)
    for _ in range(100):  # SIGKILL cannot be ignored: a moment for the kernel to end them
        _killpg(pgid, signal.SIGKILL)
        proc.poll()
        if proc.returncode is not None and not group_members(pgid):
            return
        time.sleep(0.05)


def marked(command_id: str) -> list[int]:
    """The live processes whose environment holds COMMAND_ID_ENV=command_id (only this user's
    are readable): what a command started, also outside its group."""
    needle = f"{COMMAND_ID_ENV}={command_id}".encode()
    found = []
    for entry in os.scandir("/proc") if sys.platform == "linux" else ():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if needle in Path(entry.path, "environ").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
            except OSError:
                continue  # gone, or another user's
    return [pid for pid in found if _live(pid)]


def end_marked(command_id: str) -> None:
    """SIGKILL every process a command started that outlived its group (setsid, a double fork)."""
    for _ in range(100):
        pids = marked(command_id)
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.02)


def _live(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] not in "ZX"


def _killpg(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


# ---------------------------------------------------------------- one process of a distributed job


def main(args: list[str] | None = None) -> None:
    """`python -m supervision.command --cwd DIR -- ARGV...`: chdir to DIR, then become ARGV under the
    reaper (exec: the rank's pid, log and watcher stay; what ARGV leaves running ends with it;
    python/python3 is this interpreter)."""
    args = sys.argv[1:] if args is None else args
    if len(args) < 4 or args[0] != "--cwd" or args[2] != "--":
        sys.exit("usage: python -m supervision.command --cwd DIR -- ARGV...")
    cwd = args[1]
    try:
        argv = command_vars.expand(python_argv(args[3:]), os.environ)  # this rank's, or this node's, NODE_RANK...
        os.chdir(cwd)
    except command_vars.UnknownVariable as e:
        sys.exit(f"supervision.command: {e}")
    except OSError as e:
        sys.exit(f"supervision.command: cannot enter the code folder {cwd!r}: {e.strerror or e}")
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        env = clean_environment()  # the rank's: the worker's settings are not the script's
        # the project's folder was on the path for this module (the rank's wrapper); the script has the SDK installed
        env["PYTHONPATH"] = os.pathsep.join(p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != str(ROOT))
        if sys.platform == "linux":  # what the command leaves running ends with it, as for one process (reaper.py)
            _startable(argv, Path.cwd(), env)
            argv = [sys.executable, str(REAPER), *argv]
        os.execvpe(argv[0], argv, env)
    except OSError as e:
        sys.exit(f"supervision.command: cannot run {argv[0]!r} in {cwd!r}: {e.strerror or e}")


if __name__ == "__main__":
    main()
