"""Distributed nodes on two real Celery workers (distinct node names) on the same database and
broker: node count x process count per node, logs per rank, bad run settings, failures, cancel.

The processes run tests/toy_rank.py (Gloo all-reduces, a failure on demand) through the module
`toy_distributed`, so that each job takes seconds; tests/training/test_distributed_training.py
runs Train PyTorch Model itself the same way.

`make test`'s production pass (PostgreSQL, Redis) runs the tests marked `production`: a job over
two workers (node 0 reserving the other worker's row, the launch on its own Redis queue, a rank's
end seen by the other node through the database), too many nodes for the workers, and cancel with
live logs. The others (settings refused, one node of several processes, ports, a rank raising or
killed within one node) depend on torchrun and the run settings, not on the services: the
embedded pass runs them.
"""
import os
import signal
import socket
import time
from pathlib import Path

import pytest
from django.conf import settings

from designer.pipelines.models import NodeLaunch, Worker
from designer.pipelines.runs import service as runs
from supervision import launch
from tests.conftest import KEPT, TEST_DATA, CeleryWorker, kept, wait_for_run
from tests.pipes import node, out_path, pipeline
from tests.workers import all_ready, registered

pytestmark = pytest.mark.django_db(transaction=True)

# the rendezvous ports the two workers try, in order (a test takes some of them)
PORTS = list(range(29700 + os.getpid() % 200 * 10, 29700 + os.getpid() % 200 * 10 + 4))
# the CPU cores the two workers offer (WORKER_CPUS): the machine's, but fewer than 64, so that a
# Process count per node over them is still one the run settings accept (at most 64)
CPUS = min(os.cpu_count() or 1, 63)


def start_two_workers() -> list[CeleryWorker]:
    # OMP_WAIT_POLICY: the ranks' OpenMP threads sleep when idle instead of spinning on the cores
    # that other engineers' work shares (a spinning thread slows a busy machine's training tenfold)
    env = {"DISTRIBUTED_PORTS": f"{PORTS[0]}-{PORTS[-1]}", "DISTRIBUTED_START_SECONDS": "60", "WORKER_CPUS": str(CPUS),
           "OMP_WAIT_POLICY": "PASSIVE"}
    workers = [CeleryWorker(name, concurrency=2, log_dir=TEST_DATA, extra_env=env) for name in ("dist-a", "dist-b")]
    return all_ready(workers)


@pytest.fixture(scope="module")
@kept("distributed")
def two_workers(django_db_setup, django_db_blocker):
    """Two workers for this module and the next ones that import this fixture (tests/conftest.py KEPT)."""
    with django_db_blocker.unblock():
        return KEPT.get("distributed", start_two_workers)


@pytest.fixture
def workers(two_workers, transactional_db):
    """Both workers registered (a test's database flush removes their rows until the next beat)."""
    return registered(two_workers)


def toy(nodes=1, processes=1, max_retries=None, **params):
    n = node("toy", "toy_distributed", **params)
    n["run_settings"] = {"node_count": nodes, "process_count_per_node": processes,
                         **({} if max_retries is None else {"max_retries": max_retries})}
    return pipeline([n], [])


def logs_of(run) -> Path:
    return Path(settings.ARTIFACT_ROOT) / str(run.id) / "toy" / "logs"


def leftover_processes(run) -> list[str]:
    """Processes whose command line names this run's artifacts (torchrun and its ranks)."""
    marker = f"{settings.ARTIFACT_ROOT}/{run.id}/".encode()
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmdline = (proc / "cmdline").read_bytes()
            except OSError:
                continue
            if marker in cmdline and int(proc.name) != os.getpid():
                text = cmdline.replace(b"\0", b" ").decode(errors="replace")
                found.append(f"{proc.name}: {text[:200]}")
    return found


def no_process_left(run, within=30.0):
    deadline = time.monotonic() + within
    while (left := leftover_processes(run)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not left, left


# ---------------------------------------------------------------- it works


@pytest.mark.production
def test_two_nodes_of_one_process_run_on_two_workers_with_a_driver_log_per_rank(workers, users, owner_client):
    run = runs.submit(users["owner"], toy(2, 1, steps=5))
    run = wait_for_run(run.id, timeout=90)
    nr = run.nodes.get()
    assert run.status == "completed", nr.error
    launches = list(NodeLaunch.objects.filter(noderun=nr))
    assert sorted(x.worker.hostname for x in launches) == sorted(w.hostname for w in workers)  # one worker = one node
    assert all(x.status == "exited" and x.exit_code == 0 for x in launches)
    assert (out_path(nr.outputs["out"]) / "world.txt").read_text() == "2"
    files = owner_client.get(f"/api/runs/{run.id}/nodes/toy/files").json()["logs"]
    names = {f["path"] for f in files}
    assert {"70_driver_log_0.txt", "70_driver_log_1.txt", "70_mpi_log.txt"} <= names
    for rank in (0, 1):
        text = (logs_of(run) / f"70_driver_log_{rank}.txt").read_text()
        assert f"rank {rank} of 2" in text and "MASTER_ADDR=" in text and "step 5: sum 2" in text
        # one process per node: rank r runs on node r
        assert f"NODE_RANK={rank} WORLD_SIZE=2 RANK={rank} LOCAL_RANK=0" in text, text
    mpi = (logs_of(run) / "70_mpi_log.txt").read_text()
    assert "rendezvous (c10d)" in mpi and "torch.distributed.run" in mpi and "every node finished" in mpi
    # rank 0's metrics reach the node's events (Metrics pane)
    sums = [e.data["value"] for e in run.events.filter(type="metric") if e.data["name"] == "sum"]
    assert sums == [2.0] * 5
    assert not Worker.objects.filter(reserved_by__isnull=False).exists()  # reservations released
    no_process_left(run)
    # the node count is part of what a distributed node computes: 1 x 1 does not reuse 2 x 1's output
    one = wait_for_run(runs.submit(users["owner"], toy(1, 1, steps=5)).id, timeout=90).nodes.get()
    assert one.status == "completed" and (out_path(one.outputs["out"]) / "world.txt").read_text() == "1"


def test_one_node_of_two_processes(workers, users):
    run = wait_for_run(runs.submit(users["owner"], toy(1, 2, steps=3)).id, timeout=90)
    nr = run.nodes.get()
    assert run.status == "completed", nr.error
    assert NodeLaunch.objects.filter(noderun=nr).count() == 1
    for rank in (0, 1):
        text = (logs_of(run) / f"70_driver_log_{rank}.txt").read_text()
        assert f"RANK={rank} LOCAL_RANK={rank}" in text and "NODE_RANK=0" in text and "step 3: sum 2" in text
        # torch's threads: the worker's cores shared by its 2 slots and the node's 2 processes, at least one
        assert f"OMP_NUM_THREADS={max(1, CPUS // 4)}" in text, text
    no_process_left(run)
    # run settings are part of what a distributed node computes: 1 process again does not reuse 2's output
    one = wait_for_run(runs.submit(users["owner"], toy(1, 1, steps=3)).id, timeout=90).nodes.get()
    assert one.status == "completed" and (out_path(one.outputs["out"]) / "world.txt").read_text() == "1"
    reused = wait_for_run(runs.submit(users["owner"], toy(1, 2, steps=3)).id, timeout=90).nodes.get()
    assert reused.status == "reused" and reused.reused_from_id == nr.id


# ---------------------------------------------------------------- refused


@pytest.mark.parametrize("setting", ["node_count", "process_count_per_node"])
@pytest.mark.parametrize("value", [0, -1, 65])
def test_absurd_run_settings_are_refused_naming_the_setting(users, owner_client, setting, value):
    doc = toy()
    doc["nodes"][0]["run_settings"][setting] = value
    problems = owner_client.post("/api/validate", doc, content_type="application/json").json()["problems"]
    label = {"node_count": "Node count", "process_count_per_node": "Process count per node"}[setting]
    assert any(label in p["message"] and "Toy distributed" in p["message"] and "64" in p["message"] for p in problems), problems


@pytest.mark.parametrize("setting", ["node_count", "process_count_per_node"])
def test_64_is_accepted_for_the_run_settings(users, owner_client, setting):
    doc = toy()
    doc["nodes"][0]["run_settings"][setting] = 64
    problems = owner_client.post("/api/validate", doc, content_type="application/json").json()["problems"]
    assert not problems, problems


@pytest.mark.production
def test_more_nodes_than_workers_fails_within_seconds_saying_why(workers, users):
    started = time.monotonic()
    run = wait_for_run(runs.submit(users["owner"], toy(3, 1)).id, timeout=60)
    nr = run.nodes.get()
    assert run.status == "failed" and time.monotonic() - started < 45  # (its message says it was refused before any process started)
    assert nr.error.startswith("DistributedLaunchError: Toy distributed: Node count is 3, but only 2 worker(s)")
    assert "One worker is one node" in nr.error
    assert "Node count is 3" in (logs_of(run) / "70_mpi_log.txt").read_text()
    assert not Worker.objects.filter(reserved_by__isnull=False).exists()


def test_more_processes_than_a_workers_cores_fails_within_seconds_saying_why(workers, users):
    too_many = CPUS + 1  # at most 64: accepted by validation, refused by the worker
    started = time.monotonic()
    run = wait_for_run(runs.submit(users["owner"], toy(1, too_many)).id, timeout=60)
    nr = run.nodes.get()
    assert run.status == "failed" and time.monotonic() - started < 45  # (its message says it was refused before any process started)
    assert f"Process count per node is {too_many}, more than the {CPUS} CPU core(s) of worker" in nr.error
    assert "Process count per node is" in (logs_of(run) / "70_mpi_log.txt").read_text()
    assert not list(logs_of(run).glob("70_driver_log_*"))  # no process started


def _listen(port):
    s = socket.socket()
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # the port may be in TIME_WAIT from a job before
        s.bind(("", port))
        s.listen()
    except OSError:
        s.close()
        raise
    return s


def test_a_port_in_use_at_the_master_is_skipped(workers, users):
    taken = [_listen(p) for p in PORTS[:-1]]
    try:
        run = wait_for_run(runs.submit(users["owner"], toy(1, 2, steps=2)).id, timeout=90)
    finally:
        for s in taken:
            s.close()
    assert run.status == "completed", run.nodes.get().error
    mpi = (logs_of(run) / "70_mpi_log.txt").read_text()
    assert f"port {PORTS[0]} is in use" in mpi and "rendezvous (c10d) at " in mpi and f":{PORTS[-1]}," in mpi


def test_every_port_in_use_at_the_master_fails_naming_the_ports(workers, users):
    taken = [_listen(p) for p in PORTS]
    try:
        run = wait_for_run(runs.submit(users["owner"], toy(1, 2, steps=2)).id, timeout=90)
    finally:
        for s in taken:
            s.close()
    nr = run.nodes.get()
    assert run.status == "failed"
    assert f"the rendezvous ports {PORTS[0]}-{PORTS[-1]} are in use on worker" in nr.error and "DISTRIBUTED_PORTS" in nr.error


# ---------------------------------------------------------------- failures, cancel, live logs


def test_one_rank_raising_stops_every_rank_and_the_node_shows_its_traceback(workers, users):
    run = runs.submit(users["owner"], toy(2, 1, steps=100000, step_seconds=0.05, fail_rank=1, fail_at_step=20))
    run = wait_for_run(run.id, timeout=90)
    nr = run.nodes.get()
    assert run.status == "failed"
    assert "Toy distributed: rank 1 (node " in nr.error and "failed (ToyFailure: rank 1 fails at step 20" in nr.error
    assert "The last lines of 70_driver_log_1.txt:\nTraceback" in nr.error or "Traceback (most recent call last)" in nr.error
    assert nr.error.rstrip().endswith("ToyFailure: rank 1 fails at step 20, as asked")
    # an error of the script is not run again (Max retries is 2: a signal would restart the processes)
    assert (logs_of(run) / "70_driver_log_1.txt").read_text().count("Traceback (most recent call last)") == 1
    failed_at = nr.finished_at
    rank1 = (logs_of(run) / "70_driver_log_1.txt")
    assert (failed_at.timestamp() - rank1.stat().st_mtime) < 30  # the node failed within seconds of the rank
    no_process_left(run)


@pytest.mark.parametrize("layout", [pytest.param((2, 1), marks=pytest.mark.production), (1, 2)], ids=["2x1", "1x2"])
def test_a_rank_killed_is_named_with_its_signal_not_the_rank_that_lost_its_connection(workers, users, layout):
    """Issue 10: the node blamed rank 0 ("connection closed by peer"); rank 1 was killed first.
    With Max retries 0: a killed rank otherwise restarts the job's processes (tests/training/test_resume.py)."""
    run = runs.submit(users["owner"], toy(*layout, max_retries=0, steps=100000, step_seconds=0.05))
    log = logs_of(run) / "70_driver_log_1.txt"
    deadline = time.monotonic() + 60
    while "step 3: sum 2" not in (log.read_text() if log.exists() else ""):  # past the rendezvous, all-reducing
        assert time.monotonic() < deadline, run.nodes.get().error
        time.sleep(0.2)
    state = launch.rank_states(logs_of(run).parent / "work" / "ranks")[1]
    os.kill(state["pid"], signal.SIGKILL)
    run = wait_for_run(run.id, timeout=60)
    nr = run.nodes.get()
    assert run.status == "failed"
    first_line = nr.error.splitlines()[0]
    assert first_line.startswith(
        f"DistributedLaunchError: Toy distributed: rank 1 (node {state['node_rank']}, local rank {state['local_rank']}, "
        f"worker {state['worker']}) was killed by signal 9 (SIGKILL"), nr.error
    assert "peer" not in first_line
    assert "The last lines of 70_driver_log_1.txt:" in nr.error and "step 3: sum 2" in nr.error
    mpi = (logs_of(run) / "70_mpi_log.txt").read_text()
    assert "rank 1 (node " in mpi and "was killed by signal 9 (SIGKILL" in mpi  # the launcher's log ends with it too
    no_process_left(run)


@pytest.mark.production
def test_cancelling_ends_every_process_on_every_worker_and_logs_are_live(workers, users, owner_client):
    run = runs.submit(users["owner"], toy(2, 1, steps=100000, step_seconds=0.05))
    url = f"/api/runs/{run.id}/nodes/toy/log?file=70_driver_log_1.txt"
    deadline = time.monotonic() + 60
    while "step 3:" not in (first := owner_client.get(url + "&offset=0").json()).get("text", ""):
        assert time.monotonic() < deadline, first  # 404 until rank 1 has started
        time.sleep(0.3)
    assert first["status"] == "running"
    deadline = time.monotonic() + 30
    while not (more := owner_client.get(f"{url}&offset={first['next_offset']}").json())["text"]:
        assert time.monotonic() < deadline, more
        time.sleep(0.3)
    assert more["text"].startswith("step ") and more["offset"] == first["next_offset"]  # the tail goes on
    assert leftover_processes(run)  # torchrun and its ranks are running

    owner_client.post(f"/api/runs/{run.id}/cancel")
    cancelled = time.monotonic()
    run = wait_for_run(run.id, timeout=60)
    # node 0 may wait for its members (LOST_AFTER + STOP_GRACE) before it ends: seconds, on a busy machine tens
    assert run.status == "cancelled" and time.monotonic() - cancelled < 30
    no_process_left(run)
    assert all(x.status == "exited" for x in NodeLaunch.objects.filter(noderun__run=run))
