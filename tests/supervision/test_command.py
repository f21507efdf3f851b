"""Running a component's command (issue 14, item 3): real scripts in real processes. A script that
fails, exits, hangs past its timeout, prints a million lines, reports metrics, is cancelled or is
asked to stop early; and whatever happens, no process of its group is left running."""
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import sdk
from sdk import compat
from sdk.context import COOPERATIVE, ENDED, FINISHED, Stopped
from sdk.errors import Cancelled, CommandFailed, CommandTimedOut
from supervision import command, launch
from tests.conftest import ROOT


def script(tmp_path: Path, body: str, name: str = "script.py") -> Path:
    code = tmp_path / "code"
    code.mkdir(exist_ok=True)
    (code / name).write_text(textwrap.dedent(body))
    return code


def run(tmp_path: Path, body: str, *args: str, **kwargs) -> Path:
    """Run `python script.py ARGS` (the script's body given) in tmp/code; return the log's path."""
    code = script(tmp_path, body)
    log = tmp_path / "logs" / "70_driver_log.txt"
    command.run(["python", "script.py", *args], code, log, label="My Script", **kwargs)
    return log


def alive(pid: int) -> bool:
    """Running (a zombie, ended but not yet reaped by its new parent, does not count)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] not in "ZX"


# A script that starts a grandchild (a process of its group), writes both pids, then waits forever.
HANGS = """
    import os, subprocess, sys, time
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    {before}
    open("pids.txt", "w").write(f"{{os.getpid()}} {{child.pid}}\\n")
    print("waiting", flush=True)
    time.sleep(600)
"""


def test_a_script_that_raises_fails_with_the_end_of_its_traceback(tmp_path):
    with pytest.raises(CommandFailed) as e:
        run(tmp_path, """
            print("epoch 1")
            def train():
                raise ValueError("the data folder holds no image")
            train()
        """)
    assert e.value.exit_code == 1
    assert e.value.tail.splitlines()[-1] == "ValueError: the data folder holds no image"
    assert "Traceback (most recent call last)" in e.value.tail and "epoch 1" in e.value.tail
    assert str(e.value).startswith("My Script: the command exited with code 1; the last lines of its output:\n")
    assert str(e.value).endswith("ValueError: the data folder holds no image")


def test_the_tail_holds_the_last_twenty_lines_of_this_run_only(tmp_path):
    log = tmp_path / "logs" / "70_driver_log.txt"
    log.parent.mkdir(parents=True)
    log.write_text("12:00:00 My Script starts\n")
    with pytest.raises(CommandFailed) as e:
        run(tmp_path, "import sys\nfor i in range(50): print(i)\nsys.exit(3)\n")
    assert e.value.exit_code == 3 and "exited with code 3" in str(e.value)
    assert e.value.tail.splitlines() == [str(i) for i in range(30, 50)]
    assert log.read_text().splitlines()[0] == "12:00:00 My Script starts"  # appended to, not replaced


def test_a_script_killed_by_a_signal_is_named_so_and_a_long_line_of_its_tail_is_cut(tmp_path):
    with pytest.raises(CommandFailed) as e:
        run(tmp_path, "import os, signal\nprint('x' * 100_000, flush=True)\nos.kill(os.getpid(), signal.SIGKILL)\n")
    assert e.value.exit_code == -9 and "the command was killed by signal 9 (SIGKILL)" in str(e.value)
    assert e.value.tail == "x" * command.MAX_TAIL_LINE + " [...]"


def test_a_script_that_exits_0_returns_its_output_appended_to_the_log_as_it_is(tmp_path):
    log = run(tmp_path, """
        import os, sys
        print("hello from", os.getcwd())
        print("to stderr", file=sys.stderr)
        print(sys.executable)
        print(os.environ["RANK"], os.environ["WORLD_SIZE"], os.environ["LOCAL_RANK"], os.environ["NODE_RANK"],
              os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]) > 0)
    """)
    lines = log.read_text().splitlines()
    assert lines == [f"hello from {tmp_path / 'code'}", "to stderr", sys.executable, "0 1 0 0 127.0.0.1 True"]


def test_a_command_that_cannot_start_is_named(tmp_path):
    (tmp_path / "code").mkdir()
    with pytest.raises(CommandFailed, match=r"My Script: the command could not start: 'no-such-program'"):
        command.run(["no-such-program", "--x"], tmp_path / "code", tmp_path / "log.txt", label="My Script")


def test_a_script_that_hangs_past_its_timeout_is_ended_with_every_process_of_its_group(tmp_path):
    started = time.monotonic()
    with pytest.raises(CommandTimedOut) as e:
        run(tmp_path, HANGS.format(before=""), timeout=6)  # seconds for Python to start on a busy machine
    took = time.monotonic() - started
    assert str(e.value) == "My Script: the command ran past its Timeout of 6 s and was ended"
    assert 6 <= took < 6 + command.STOP_GRACE_SECONDS, took  # SIGTERM was enough: no wait for the grace
    pids = [int(p) for p in (tmp_path / "code" / "pids.txt").read_text().split()]
    assert [p for p in pids if alive(p)] == []
    assert command.group_members(pids[0]) == []


def test_a_script_that_ignores_sigterm_is_killed_after_the_grace(tmp_path, monkeypatch):
    monkeypatch.setattr(command, "STOP_GRACE_SECONDS", 1.0)
    before = "import signal; signal.signal(signal.SIGTERM, signal.SIG_IGN)"
    with pytest.raises(CommandTimedOut):
        run(tmp_path, HANGS.format(before=before), timeout=6)
    pids = [int(p) for p in (tmp_path / "code" / "pids.txt").read_text().split()]
    assert [p for p in pids if alive(p)] == [] and command.group_members(pids[0]) == []


def test_a_process_the_script_left_behind_is_ended_when_it_exits(tmp_path):
    run(tmp_path, """
        import os, subprocess, sys
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        open("pids.txt", "w").write(f"{os.getpid()} {child.pid}\\n")
    """)
    pids = [int(p) for p in (tmp_path / "code" / "pids.txt").read_text().split()]
    assert [p for p in pids if alive(p)] == []


def test_cancel_ends_the_script_and_its_children(tmp_path):
    pids_file = tmp_path / "code" / "pids.txt"

    def check_cancelled():
        if pids_file.exists() and pids_file.read_text().endswith("\n"):
            raise Cancelled()

    with pytest.raises(Cancelled):
        run(tmp_path, HANGS.format(before=""), check_cancelled=check_cancelled)
    pids = [int(p) for p in pids_file.read_text().split()]
    assert [p for p in pids if alive(p)] == [] and command.group_members(pids[0]) == []


def test_a_million_lines_go_to_the_log_quickly_in_bounded_memory(tmp_path):
    """The supervising process (a fresh one, to measure its peak memory) reads 63 MB of output
    for its ##metric lines a chunk at a time."""
    code = script(tmp_path, """
        for i in range(1_000_000):
            print(f"line {i:07d} of the million-line script, padded to sixty bytes")
            if i == 500_000:
                print("##metric halfway=1 step=1")
        print("##metric done=1 step=2")
    """)
    log = tmp_path / "log.txt"
    supervisor = textwrap.dedent(f"""
        import json, re, time
        from supervision import command, launch
        got = []
        started = time.monotonic()
        command.run(["python", "script.py"], {str(code)!r}, {str(log)!r}, on_metric=lambda *m: got.append(m))
        peak = int(re.search(r"VmHWM:\\s+(\\d+) kB", open("/proc/self/status").read()).group(1))  # since exec
        print(json.dumps({{"seconds": time.monotonic() - started, "metrics": got, "peak_mb": peak / 1024}}))
    """)
    done = subprocess.run([sys.executable, "-c", supervisor], cwd=ROOT, capture_output=True, text=True, check=True)
    result = json.loads(done.stdout)
    print(result)
    assert result["metrics"] == [["halfway", 1.0, 1, None], ["done", 1.0, 2, None]]
    assert result["seconds"] < 60  # about 4 s on an idle 2-core machine: the script's own print()s
    assert result["peak_mb"] < 40, result  # about 20 MB; the log alone is 63 MB
    with log.open("rb") as f:
        assert sum(1 for _ in f) == 1_000_002


def test_metrics_from_log_metric_and_from_metric_lines_reach_on_metric(tmp_path):
    got = []
    log = run(tmp_path, """
        from sdk import log_metric
        for epoch in (1, 2):
            log_metric("training_loss", 1.0 / epoch, step=epoch, steps=2)
            print(f"##metric validation_accuracy={0.4 * epoch} top5=0.9 step={epoch}")
        print("##metric accuracy=high")
        print("not a ##metric line")
    """, metrics_file=tmp_path / "metrics.jsonl", on_metric=lambda *m: got.append(m))
    by_name = {}
    for name, value, step, steps in got:
        by_name.setdefault(name, []).append((value, step, steps))
    assert by_name == {"training_loss": [(1.0, 1, 2), (0.5, 2, 2)],
                       "validation_accuracy": [(0.4, 1, None), (0.8, 2, None)],
                       "top5": [(0.9, 1, None), (0.9, 2, None)]}
    assert "(designer) line ignored: ##metric: the value of accuracy is not a number: 'high'" in log.read_text()


def test_stop_requested_creates_the_stop_file_that_the_script_sees(tmp_path):
    stop_file = tmp_path / "work" / "STOP"

    def stop_requested():
        return (tmp_path / "code" / "started.txt").exists()

    log = run(tmp_path, """
        import time
        from sdk import stop_requested
        open("started.txt", "w").write("yes")
        epoch = 0
        while not stop_requested():
            epoch += 1
            time.sleep(0.05)
        print("stopped early after", epoch > 0)
    """, stop_file=stop_file, metrics_file=tmp_path / "metrics.jsonl", stop_requested=stop_requested, timeout=60)
    assert stop_file.exists()
    assert "stopped early after True" in log.read_text()


def stop_when_started(tmp_path: Path):
    """The policy's decision, as the supervisor asks it: stop once the script has begun."""
    return lambda: (tmp_path / "code" / "started.txt").exists()


def run_asked(tmp_path: Path, body: str, grace: float) -> tuple[Stopped | None, Path, float]:
    """Run the script with a stop request once it has begun; (how it stopped, its log, seconds it took)."""
    code, log = script(tmp_path, body), tmp_path / "logs" / "70_driver_log.txt"
    started = time.monotonic()
    stopped = command.run(["python", "script.py"], code, log, label="My Script", timeout=120, stop_file=tmp_path / "work" / "STOP",
                          metrics_file=tmp_path / "metrics.jsonl", stop_requested=stop_when_started(tmp_path), stop_grace=grace)
    return stopped, log, time.monotonic() - started


def test_a_script_that_never_asks_is_ended_after_the_grace_keeping_its_outputs_and_counts_as_stopped(tmp_path):
    stopped, log, took = run_asked(tmp_path, """
        import os, subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        open("pids.txt", "w").write(f"{os.getpid()} {child.pid}")
        open("started.txt", "w").write("yes")
        for epoch in range(1, 600):
            open("model.tmp", "w").write(f"epoch {epoch}")  # what it has so far, whole whenever it is ended
            os.replace("model.tmp", "model.txt")
            time.sleep(0.1)
    """, grace=1.5)
    assert stopped is not None and (stopped.how, stopped.grace, stopped.seen) == (ENDED, 1.5, False)  # no CommandFailed
    assert 1.5 <= stopped.after < 1.5 + command.STOP_GRACE_SECONDS and took < 30
    assert (tmp_path / "code" / "model.txt").read_text().startswith("epoch ")  # kept
    pids = [int(p) for p in (tmp_path / "code" / "pids.txt").read_text().split()]
    assert [p for p in pids if alive(p)] == [] and command.group_members(pids[0]) == []
    text = log.read_text()
    assert "(designer) asked the command to stop early" in text and "it is ended if it still runs in 1.5 s" in text
    assert "(designer) the command still runs 1.5 s after it was asked to stop: ending it" in text
    assert "never read stop_requested()" in stopped.text() and "may be partial" in stopped.text()


def test_a_script_that_honours_the_request_stops_itself_and_is_reported_cooperative(tmp_path):
    stopped, log, _ = run_asked(tmp_path, """
        import time
        from sdk import stop_requested
        open("started.txt", "w").write("yes")
        epoch = 0
        while not stop_requested():
            epoch += 1
            time.sleep(0.05)
        print("stopped early after epoch", epoch)
    """, grace=60)
    assert stopped is not None and (stopped.how, stopped.seen) == (COOPERATIVE, True) and stopped.after < 30
    assert (tmp_path / "work" / "STOP.seen").exists()  # stop_requested() said True: it marked so
    assert "stopped early after epoch" in log.read_text() and "ending it" not in log.read_text()
    assert stopped.text().startswith("the script stopped when asked")


def test_a_script_asked_that_ends_without_reading_the_request_ran_its_course(tmp_path):
    stopped, _, _ = run_asked(tmp_path, """
        import time
        open("started.txt", "w").write("yes")
        time.sleep(1)
        print("all epochs done")
    """, grace=60)
    assert stopped is not None and (stopped.how, stopped.seen) == (FINISHED, False)


def test_a_script_never_asked_returns_none(tmp_path):
    code = script(tmp_path, "print('done')\n")
    assert command.run(["python", "script.py"], code, tmp_path / "log.txt", stop_file=tmp_path / "STOP") is None


def test_the_distributed_entry_enters_the_code_folder_and_becomes_the_command(tmp_path):
    """`python -m supervision.command --cwd DIR -- python script.py`, as supervision.rank runs it in each
    process: the script runs in DIR with the worker's interpreter, a child of the same process (exec'd
    into the reaper, which ends what the script leaves running)."""
    code = script(tmp_path, "import os, sys\nprint(os.getcwd(), os.getppid(), sys.executable, sys.argv[1:])\n")
    child = subprocess.Popen([sys.executable, "-m", "supervision.command", "--cwd", str(code), "--", "python", "script.py",
                              "--a b"], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    out, _ = child.communicate(timeout=60)
    assert child.returncode == 0
    assert out.split() == [str(code), str(child.pid), sys.executable, "['--a", "b']"]


def test_under_training_rank_the_script_writes_the_rank_log_and_its_failure_is_recorded(tmp_path):
    code = script(tmp_path, "import os\nprint('rank', os.environ['RANK'], os.getcwd())\nraise SystemExit(4)\n")
    env = {**os.environ, "RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1", "GROUP_RANK": "0",
           "DESIGNER_RANK_LOG_DIR": str(tmp_path / "logs"), "DESIGNER_RANK_STATE_DIR": str(tmp_path / "ranks"),
           **command.job_env(tmp_path / "metrics.jsonl", None)}
    # torchrun polls its ranks (monitor_interval), so a rank's watcher reads its exit status before it is
    # reaped; this test reaps only once the watcher has written (subprocess.run reaped at once: a race)
    rank = subprocess.Popen([sys.executable, "-m", "supervision.rank", "supervision.command", "--cwd", str(code), "--",
                             "python", "script.py"], cwd=ROOT, env=env)
    deadline = time.monotonic() + 60
    while not (state := launch.rank_states(tmp_path / "ranks").get(1, {})).get("ended_at"):
        assert time.monotonic() < deadline, state  # (no poll(): it would reap)
        time.sleep(0.05)
    assert rank.wait(timeout=60) == 4
    log = (tmp_path / "logs" / "70_driver_log_1.txt").read_text()
    assert f"rank 1 {code}" in log
    assert state["exit_code"] == 4


def test_the_distributed_entry_names_a_missing_code_folder(tmp_path):
    done = subprocess.run([sys.executable, "-m", "supervision.command", "--cwd", str(tmp_path / "nope"), "--", "python",
                           "x.py"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "supervision.command: cannot enter the code folder" in done.stderr and "nope" in done.stderr


def test_job_env_puts_the_originals_logging_apis_on_pythonpath_and_nothing_of_the_project(monkeypatch):
    monkeypatch.delenv("PYTHONPATH", raising=False)
    env = command.job_env(Path("/m.jsonl"), Path("/STOP"))
    assert env["PYTHONPATH"].split(os.pathsep) == compat.search_path()  # sdk/compat's azureml (and mlflow) shims
    assert env["DESIGNER_METRICS_FILE"] == "/m.jsonl" and env["DESIGNER_STOP_FILE"] == "/STOP"
    assert "RANK" not in env and command.environment()["WORLD_SIZE"] == "1"


def test_the_installed_sdk_is_what_a_script_imports_and_the_web_app_is_out_of_its_reach(tmp_path, monkeypatch):
    """Issue 28: the SDK is a package installed into the environment (sdk/pyproject.toml, make deps),
    not reached through the project's folder on PYTHONPATH; a script cannot import the web app."""
    monkeypatch.delenv("PYTHONPATH", raising=False)
    log = run(tmp_path, """
        import importlib.metadata, importlib.util, sdk
        from sdk import log_metric
        print(sdk.__version__, importlib.metadata.version("pipeline-designer-sdk"), importlib.util.find_spec("designer"))
    """)
    assert log.read_text().split()[-3:] == [sdk.__version__, sdk.__version__, "None"]


def test_the_script_starts_from_a_clean_environment_without_the_workers_secrets(tmp_path, monkeypatch):
    """Issue 31: a component's command inherited SECRET_KEY, DATABASE_URL and the broker's URL (it
    could read every user's data as the app). It gets what a script needs, and nothing else."""
    secrets = {"SECRET_KEY": "s" * 50, "DATABASE_URL": "postgres://app:pw@db/app", "CELERY_BROKER_URL": "redis://r/0",
               "CHANNEL_LAYER_URL": "redis://r/1", "DESIGNER_EXTRA_MODULES": "x", "AWS_SECRET_ACCESS_KEY": "k"}
    for name, value in {**secrets, "CUDA_VISIBLE_DEVICES": "1", "TORCHELASTIC_RUN_ID": "r", "LANG": "C.UTF-8"}.items():
        monkeypatch.setenv(name, value)
    log = run(tmp_path, "import json, os\nprint(json.dumps(dict(os.environ)))\n",
              metrics_file=tmp_path / "m.jsonl", stop_file=tmp_path / "STOP")
    env = json.loads(log.read_text().splitlines()[-1])
    assert not set(secrets) & set(env), env
    assert env["CUDA_VISIBLE_DEVICES"] == "1" and env["TORCHELASTIC_RUN_ID"] == "r" and env["LANG"] == "C.UTF-8"
    assert env["PATH"] == os.environ["PATH"] and env["PYTHONPATH"].split(os.pathsep)[:len(compat.search_path())] == compat.search_path()
    assert env["DESIGNER_METRICS_FILE"] == str(tmp_path / "m.jsonl") and env["WORLD_SIZE"] == "1"
    assert set(env) <= set(command.KEPT) | {k for k in env if k.startswith(command.KEPT_PREFIXES)}, env
    # the distributed entry (each rank) too
    code = script(tmp_path, "import json, os\nprint(json.dumps(dict(os.environ)))\n", "env.py")
    out = subprocess.run([sys.executable, "-m", "supervision.command", "--cwd", str(code), "--", "python", "env.py"], cwd=ROOT,
                         env={**os.environ, "RANK": "1", "WORLD_SIZE": "2", "PYTHONPATH": f"/shim{os.pathsep}{ROOT}"},
                         capture_output=True, text=True, timeout=60)
    env = json.loads(out.stdout)
    assert not set(secrets) & set(env) and env["RANK"] == "1" and env["CUDA_VISIBLE_DEVICES"] == "1", env
    assert env["PYTHONPATH"] == "/shim"  # the project's folder was the rank wrapper's, not the script's


@pytest.mark.parametrize("environment", ["kept", "emptied"])
def test_a_process_the_script_detached_from_its_group_ends_with_it(tmp_path, environment):
    """Issue 31: a daemon (a new session, its parent gone) left the process group and outlived its
    node; also one that then emptied its environment (`env -i`: no mark of the command left on it)."""
    daemon = ("open('daemon.tmp', 'w').write(str(os.getpid())); os.rename('daemon.tmp', 'daemon.txt'); "
              "time.sleep(600)")
    become = (f"os.execve(sys.executable, [sys.executable, '-c', {'import os, time; ' + daemon!r}], {{}})"
              if environment == "emptied" else daemon)
    run(tmp_path, f"""
        import os, sys, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                {become}
            os._exit(0)
        deadline = time.monotonic() + 20
        while not os.path.exists("daemon.txt") and time.monotonic() < deadline:
            time.sleep(0.01)
    """)
    pid = int((tmp_path / "code" / "daemon.txt").read_text())
    assert not alive(pid)
