"""supervision/reaper.py, the child subreaper a component's command runs under (issue 31): what the
command leaves behind ends with it, also a daemon that emptied its environment; the command's exit
status is the reaper's. (supervision.command.run's own tests run it through a node's supervision; these
start it directly, as run does.)"""
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from supervision import command
from supervision.reaper import __file__ as REAPER

DAEMON = textwrap.dedent("""
    import os, sys, time
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:  # a daemon, its environment emptied: no group, no mark of the command
            os.execve(sys.executable, [sys.executable, "-c", "import os, time; open('daemon.tmp', 'w').write(str(os.getpid())); "
                      "os.rename('daemon.tmp', 'daemon.txt'); time.sleep(600)"], {})
        os._exit(0)
    while not os.path.exists("daemon.txt"):
        time.sleep(0.01)
""")


def reaper(tmp_path: Path, body: str) -> subprocess.Popen:
    (tmp_path / "script.py").write_text(body)
    return subprocess.Popen([sys.executable, REAPER, sys.executable, "script.py"], cwd=tmp_path, start_new_session=True)


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in "ZX"
    except OSError:
        return False


def daemon_of(tmp_path: Path) -> int:
    deadline = time.monotonic() + 30
    while not (tmp_path / "daemon.txt").exists():
        assert time.monotonic() < deadline, "the daemon did not start"
        time.sleep(0.01)
    return int((tmp_path / "daemon.txt").read_text())


@pytest.mark.parametrize(("ending", "status"), [("sys.exit(3)", 3), ("os.kill(os.getpid(), signal.SIGKILL)", -9)])
def test_the_daemon_a_command_left_ends_with_it_and_its_status_is_the_reapers(tmp_path, ending, status):
    proc = reaper(tmp_path, DAEMON + f"import signal\n{ending}\n")
    assert proc.wait(30) == status
    pid = daemon_of(tmp_path)
    assert not alive(pid)


def test_asked_to_stop_the_reaper_ends_what_the_command_left_and_then_the_command_ends(tmp_path):
    proc = reaper(tmp_path, DAEMON + "time.sleep(600)\n")
    pid = daemon_of(tmp_path)
    os.killpg(proc.pid, signal.SIGTERM)  # as supervision.command.end_group asks the command's group
    assert proc.wait(30) == -signal.SIGTERM
    assert not alive(pid)


def test_a_command_that_cannot_start_is_named_and_exits_127(tmp_path):
    proc = subprocess.run([sys.executable, REAPER, str(tmp_path / "no-such-program")], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 127 and "the command could not start" in proc.stderr


def test_the_second_net_kills_a_process_marked_with_the_commands_id(tmp_path):
    """A process outside the command's group and outside the reaper's reach (its parent, the reaper,
    killed) is still found by the command's id in its environment."""
    marked = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                              env={**os.environ, command.COMMAND_ID_ENV: "test-id"}, start_new_session=True)
    try:
        assert command.marked("test-id") == [marked.pid]
        command.end_marked("test-id")
        assert marked.wait(10) == -signal.SIGKILL and command.marked("test-id") == []
    finally:
        marked.kill()


def test_a_command_that_is_not_executable_is_named_before_the_reaper_starts(tmp_path):
    from sdk.errors import CommandFailed

    (tmp_path / "tool.sh").write_text("echo hi\n")  # no execute permission
    with pytest.raises(CommandFailed, match=r"My Tool: the command could not start: './tool.sh' in .*: Permission denied"):
        command.run(["./tool.sh"], tmp_path, tmp_path / "log.txt", label="My Tool")
