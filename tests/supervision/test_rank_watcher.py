"""How a rank ended, recorded even when it could not say so itself (issue 10, item 7): supervision.rank
forks a watcher that records the moment and the exit code or signal of its rank; the launcher
names the rank whose failure came first and was not caused by another rank's."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from supervision import launch
from tests.conftest import ROOT


def start(tmp_path: Path, rank: int, *how: str) -> subprocess.Popen:
    env = {**os.environ, "RANK": str(rank), "WORLD_SIZE": "2", "PYTHONPATH": str(ROOT),
           "DESIGNER_RANK_LOG_DIR": str(tmp_path / "logs"), "DESIGNER_RANK_STATE_DIR": str(tmp_path / "ranks")}
    return subprocess.Popen([sys.executable, "-m", "supervision.rank", "tests.supervision.ending", *how], cwd=ROOT, env=env)


def ended(tmp_path: Path, rank: int, timeout: float = 20) -> dict:
    """The rank's state once its watcher has recorded the end."""
    deadline = time.monotonic() + timeout
    while not (state := launch.rank_states(tmp_path / "ranks").get(rank, {})).get("ended_at"):
        assert time.monotonic() < deadline, state
        time.sleep(0.05)
    return state


def test_a_killed_rank_is_recorded_with_its_signal_and_the_moment_it_died(tmp_path):
    proc = start(tmp_path, 1, "sleep")
    deadline = time.monotonic() + 20
    while "ending: sleep" not in ((tmp_path / "logs" / "70_driver_log_1.txt").read_text()
                                  if (tmp_path / "logs" / "70_driver_log_1.txt").exists() else ""):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    state = launch.rank_states(tmp_path / "ranks")[1]
    assert state["pid"] == proc.pid  # the rank is the process torchrun started, not its watcher
    killed = time.time()
    proc.send_signal(signal.SIGKILL)
    state = ended(tmp_path, 1)  # before the parent reaps it (torchrun looks every --monitor-interval)
    assert proc.wait(10) == -signal.SIGKILL
    assert state["signal"] == signal.SIGKILL and "failed_at" not in state
    assert killed <= state["ended_at"] < killed + 15
    failure = launch.first_failure(tmp_path / "ranks")
    assert failure.rank == 1 and failure.how.startswith("was killed by signal 9 (SIGKILL")


def test_a_rank_that_exits_without_python_is_recorded_with_its_exit_code(tmp_path):
    proc = start(tmp_path, 0, "exit", "3")
    state = ended(tmp_path, 0)
    assert proc.wait(10) == 3
    assert state["exit_code"] == 3 and "failed_at" not in state
    assert launch.rank_failure(0, state).how == "exited with code 3"


def test_a_rank_that_raises_keeps_its_reason_and_a_clean_end_is_no_failure(tmp_path):
    proc = start(tmp_path, 0, "raise", "out of patience")
    state = ended(tmp_path, 0)
    assert proc.wait(10) == 1
    assert state["failed_at"] <= state["ended_at"] and state["exit_code"] == 1
    assert launch.rank_failure(0, state).how == "failed (RuntimeError: out of patience)"
    proc = start(tmp_path, 1, "exit", "0")
    assert ended(tmp_path, 1)["exit_code"] == 0 and launch.rank_failure(1, ended(tmp_path, 1)) is None
    assert proc.wait(10) == 0
    assert not [p for p in (tmp_path / "ranks").iterdir() if p.suffix == ".tmp"]


def _state(tmp_path: Path, rank: int, **fields) -> None:
    (tmp_path / f"rank-{rank}.json").write_text(json.dumps({"rank": rank, "node_rank": rank, "local_rank": 0,
                                                            "node_index": rank, "worker": f"w{rank}", **fields}))


PEER_GONE = ("RuntimeError: [gloo/transport/tcp/pair.cc:561] Connection closed by peer [127.0.0.1]:2968. "
             "This is typically caused by a remote worker crashing.")


@pytest.mark.parametrize("peer_first", [False, True])
def test_the_rank_that_lost_its_peer_is_not_blamed_even_when_it_noticed_first(tmp_path, peer_first):
    # the killed rank's watcher may wake a moment after the other rank raised: order alone would lie
    t = 1000.0
    _state(tmp_path, 0, failed_at=t if peer_first else t + 0.05, reason=PEER_GONE, ended_at=t + 0.5, signal=15)
    _state(tmp_path, 1, ended_at=t + 0.01, signal=9)
    failure = launch.first_failure(tmp_path)
    assert failure.rank == 1 and failure.how.startswith("was killed by signal 9 (SIGKILL")


def test_the_first_failure_wins_and_the_stop_that_follows_is_not_blamed(tmp_path):
    _state(tmp_path, 0, ended_at=1001.0, signal=15)  # stopped by torchrun after rank 1 failed
    _state(tmp_path, 1, failed_at=1000.0, reason="ValueError: bad batch", ended_at=1000.1, exit_code=1)
    _state(tmp_path, 2, ended_at=1002.0, exit_code=0)
    failure = launch.first_failure(tmp_path)
    assert (failure.rank, failure.how) == (1, "failed (ValueError: bad batch)")


def test_a_rank_reaped_before_its_watcher_looked_comes_before_a_lost_peer_but_after_a_real_failure(tmp_path):
    _state(tmp_path, 0, failed_at=1000.2, reason=PEER_GONE)
    _state(tmp_path, 1, ended_at=1000.1)  # no status: its parent reaped it first
    failure = launch.first_failure(tmp_path)
    assert (failure.rank, failure.how) == (1, "ended without a word (its exit status was not seen)")
    _state(tmp_path, 0, failed_at=1000.2, reason="OSError: disk full")
    assert launch.first_failure(tmp_path).rank == 0
