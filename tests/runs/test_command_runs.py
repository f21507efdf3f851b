"""A component's command through a real Celery worker (issue 14, item 3): past its Timeout it is
ended with every process it started, in one process and in each process of a 1 x 2 job; a
script that prints a million lines leaves them in the driver log, not in a million events."""
import os
import time
from pathlib import Path

import pytest
from django.conf import settings

from designer.engine import statuses as st
from designer.pipelines.runs import service as runs
from tests.conftest import TEST_DATA, CeleryWorker, may_add_components, stored_component, wait_for_run
from tests.pipes import node, pipeline
from tests.supervision.test_command import alive
from tests.workers import registered

pytestmark = pytest.mark.django_db(transaction=True)

# rendezvous ports of this module's worker (apart from the other distributed tests' ranges)
PORTS = list(range(31800 + os.getpid() % 200 * 2, 31800 + os.getpid() % 200 * 2 + 2))

COMPONENT = """\
kind: busy_script
label: Busy script
category: Test components
version: 1
distributed: true
command: python busy.py --pids {params.pids_dir} --lines {params.lines} --hang {params.hang} --out {outputs.out}
outputs:
  out: {type: AnyDirectory, label: Out}
params:
  pids_dir: {type: string, default: ""}
  lines: {type: int, default: 0, min: 0, max: 10000000}
  hang: {type: bool, default: false}
"""

# Each process writes its pid and its child's to <pids>/<RANK>.txt, then prints, or hangs.
SCRIPT = """\
import argparse, os, pathlib, subprocess, sys, time
p = argparse.ArgumentParser()
p.add_argument("--pids"); p.add_argument("--lines", type=int); p.add_argument("--hang"); p.add_argument("--out")
args = p.parse_args()
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
pathlib.Path(args.pids, os.environ["RANK"] + ".txt").write_text(f"{os.getpid()} {child.pid}\\n")
if args.hang == "true":
    time.sleep(600)
for i in range(args.lines):
    print(f"line {i:07d} of a script that has a lot to say")
print("##metric said=1 step=1")
pathlib.Path(args.out, "said.txt").write_text(str(args.lines))
"""


@pytest.fixture(scope="module")
def worker(django_db_setup, django_db_blocker):
    env = {"DISTRIBUTED_PORTS": f"{PORTS[0]}-{PORTS[-1]}", "DISTRIBUTED_START_SECONDS": "30", "WORKER_CPUS": "2",
           "OMP_WAIT_POLICY": "PASSIVE", "OMP_NUM_THREADS": "1"}
    with django_db_blocker.unblock():
        w = CeleryWorker("command-runs", concurrency=1, log_dir=TEST_DATA, extra_env=env)
        w.wait_ready()
    yield w
    w.stop()


@pytest.fixture
def busy(worker, users, transactional_db):
    """The owner's uploaded component `busy_script`, stored as an upload stores it."""
    registered([worker])
    owner = may_add_components(users["owner"])
    stored_component(owner, "busy_script", "Busy script", {"component.yaml": COMPONENT, "busy.py": SCRIPT})
    return owner


def submit(owner, processes: int, timeout: int = 0, **params):
    n = node("busy", "busy_script", **params)
    n["run_settings"] = {"node_count": 1, "process_count_per_node": processes, "timeout_seconds": timeout}
    return runs.submit(owner, pipeline([n], []))




def pids_of(folder: Path, ranks: int) -> list[int]:
    return [int(p) for rank in range(ranks) for p in (folder / f"{rank}.txt").read_text().split()]


def no_process_left(pids: list[int], within: float = 10) -> None:
    deadline = time.monotonic() + within
    while (left := [p for p in pids if alive(p)]) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert left == []


# the Timeout counts from the start of the processes: torchrun itself takes seconds to start, more
# on a busy machine, and every process must have started (written its pid) before it ends
@pytest.mark.parametrize(("processes", "timeout"), [(1, 8), (2, 25)])
def test_a_command_past_its_timeout_is_ended_with_every_process_it_started(busy, tmp_path, processes, timeout):
    started = time.monotonic()
    run = wait_for_run(submit(busy, processes, timeout=timeout, pids_dir=str(tmp_path), hang=True).id, timeout=120)
    nr = run.nodes.get()
    assert nr.status == st.FAILED, nr.error
    assert "Busy script: " in nr.error and f"ran past its Timeout of {timeout} s and was ended" in nr.error, nr.error
    # a timeout, one process or several, not a job that could not start
    assert nr.error.startswith("CommandTimedOut: Busy script: ") and "DistributedLaunchError" not in nr.error, nr.error
    ran = time.time() - (tmp_path / "0.txt").stat().st_mtime
    print(f"{processes} process(es): failed after {time.monotonic() - started:.1f} s, the script ran {ran:.1f} s")
    no_process_left(pids_of(tmp_path, processes))


def test_a_million_lines_stay_in_the_driver_log_not_in_events(busy, tmp_path):
    started = time.monotonic()
    run = wait_for_run(submit(busy, 1, pids_dir=str(tmp_path), lines=1_000_000).id, timeout=120)
    nr = run.nodes.get()
    assert run.status == st.COMPLETED, nr.error
    print(f"a million lines: {time.monotonic() - started:.1f} s")
    log = Path(settings.ARTIFACT_ROOT) / str(run.id) / "busy" / "logs" / "70_driver_log.txt"
    with log.open("rb") as f:
        assert sum(1 for _ in f) > 1_000_000
    assert not run.events.filter(type="log").exists()  # logs are stored once: in the files
    said = [e.data for e in run.events.filter(node_id="busy", type="metric")]
    assert [(m["name"], m["value"], m["step"]) for m in said] == [("said", 1.0, 1)]
    no_process_left(pids_of(tmp_path, 1))


def test_a_million_lines_of_rank_0_stay_in_its_log_and_only_its_metric_line_is_relayed(busy, tmp_path):
    run = wait_for_run(submit(busy, 2, pids_dir=str(tmp_path), lines=1_000_000).id, timeout=180)
    nr = run.nodes.get()
    assert run.status == st.COMPLETED, nr.error
    logs = Path(settings.ARTIFACT_ROOT) / str(run.id) / "busy" / "logs"
    for rank in (0, 1):
        with (logs / f"70_driver_log_{rank}.txt").open("rb") as f:
            assert sum(1 for _ in f) > 1_000_000
    assert not run.events.filter(type="log").exists()  # logs are stored once: in the files
    said = [e.data for e in run.events.filter(node_id="busy", type="metric")]
    assert [(m["name"], m["value"], m["step"]) for m in said] == [("said", 1.0, 1)]  # rank 0's line only
    no_process_left(pids_of(tmp_path, 2))  # each rank's child (sleep 600) ended with it: it outlived the job


def test_cancelling_ends_the_command_and_every_process_it_started(busy, tmp_path):
    run = submit(busy, 1, pids_dir=str(tmp_path), hang=True)
    deadline = time.monotonic() + 60
    while not ((tmp_path / "0.txt").exists() and (tmp_path / "0.txt").read_text().endswith("\n")):
        assert time.monotonic() < deadline, "the script never started"
        time.sleep(0.05)
    runs.cancel(run)
    run = wait_for_run(run.id, timeout=60)
    assert run.nodes.get().status == st.CANCELLED
    no_process_left(pids_of(tmp_path, 1))
