"""`python supervision/reaper.py ARGV...`: run ARGV, and end with it every process it started, also
one that left its process group and emptied its environment (a daemon's setsid and double fork,
`env -i`), which no group signal and no mark in the environment reaches.

This process is a child subreaper (Linux's PR_SET_CHILD_SUBREAPER, as systemd and tini use it): a
process whose parent ends is given to it rather than to init, so every process the command started
and left behind stays a child of this one. When the command ends, or when this process is asked to
stop (SIGTERM, as supervision.command.end_group asks the whole group), the others get SIGKILL and are
reaped; then this process ends as the command did (its exit status, or the same signal).

Started by supervision.command.run in the command's new session, with the same stdin, stdout and
stderr; only the standard library (it runs before the command, from the command's clean environment).
"""
import ctypes
import os
import signal
import sys
import time

PR_SET_CHILD_SUBREAPER = 36
PR_SET_PDEATHSIG = 1


def children() -> list[int]:
    found: list[int] = []
    for task in os.listdir(f"/proc/{os.getpid()}/task"):
        try:
            with open(f"/proc/{os.getpid()}/task/{task}/children") as f:
                found += map(int, f.read().split())
        except OSError:
            continue
    return found


# children this process had before it started the command (in a distributed job's rank, the rank's
# watcher, supervision/rank.py, forked before the exec into this program): never the command's
SPARED: set[int] = set()


def end_the_others(command: int) -> None:
    """SIGKILL every child but `command` (the orphans given to this process) until none is left:
    a killed one's own children come to this process in turn."""
    for _ in range(500):
        others = [pid for pid in children() if pid != command and pid not in SPARED]
        if not others:
            return
        for pid in others:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.01)
        reap_others(command)


def reap_others(command: int) -> None:
    for pid in [p for p in children() if p != command and p not in SPARED]:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass


def main(argv: list[str]) -> None:
    if not argv:
        sys.exit("usage: reaper.py ARGV...")
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1) != 0:
        os.execvp(argv[0], argv)  # not Linux's: the command as it is (its group is still ended)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # until the command is started
    SPARED.update(children())
    command = os.fork()
    if command == 0:
        _become(argv, libc)
    # asked to stop: the others now (the command got its own SIGTERM from the group's signal)
    signal.signal(signal.SIGTERM, lambda *_: end_the_others(command))
    status = None
    while status is None:
        try:
            pid, code = os.waitpid(command, 0)  # the orphans are reaped by end_the_others, the spared by no one here
        except InterruptedError:
            continue
        except ChildProcessError:
            break
        if pid == command:
            status = code
    end_the_others(command)
    if status is None or os.WIFEXITED(status):
        sys.exit(os.WEXITSTATUS(status) if status is not None else 1)
    _end_by(os.WTERMSIG(status))


def _become(argv: list[str], libc) -> None:  # pragma: no cover - runs in the child between fork and exec
    """The command, in the forked child: it dies with this process."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    try:
        os.execvp(argv[0], argv)
    except OSError as e:
        print(f"the command could not start: {argv[0]!r}: {e.strerror or e}", file=sys.stderr, flush=True)
        os._exit(127)


def _end_by(sig: int) -> None:  # pragma: no cover - this process ends by the signal: nothing after it is recorded
    """End as the command ended: by its signal (tests/supervision/test_reaper.py checks the status)."""
    if sig not in (signal.SIGKILL, signal.SIGSTOP):
        signal.signal(sig, signal.SIG_DFL)
    os.kill(os.getpid(), sig)


if __name__ == "__main__":
    main(sys.argv[1:])
