"""The DistributedDataParallel example (examples/components/ddp_train) as one process (headless,
inline), then on two real Celery workers: 1 node x 2 processes and 2 nodes x 1 process. Each process reads its process group from the
environment; each writes its own 70_driver_log_<rank>.txt with the right RANK, WORLD_SIZE,
LOCAL_RANK and NODE_RANK; the launcher writes 70_mpi_log.txt; rank 0's `##metric` lines are the
node's metrics; rank 0's ModelDirectory feeds Score Image Model. Two epochs on 60 digits."""
import os
import re
import time

import pytest

from designer.engine import statuses
from designer.pipelines.models import NodeLaunch, Run, Worker
from designer.pipelines.runs import service as runs
from tests.conftest import TEST_DATA, CeleryWorker, wait_for_run
from tests.e2e.component_pipes import (
    check_model_and_scores,
    digits_dataset,
    logs_of,
    metric_steps,
    run_headless,
    trained_and_scored,
)
from tests.workers import registered, stop_all

pytestmark = pytest.mark.django_db(transaction=True)

# rendezvous ports of this module's workers (apart from tests/runs/test_distributed.py's)
PORTS = list(range(29300 + os.getpid() % 200 * 2, 29300 + os.getpid() % 200 * 2 + 2))
ENVIRONMENT = re.compile(r"environment: MASTER_ADDR=(\S+) MASTER_PORT=(\d+) NODE_RANK=(\d+) WORLD_SIZE=(\d+) "
                         r"RANK=(\d+) LOCAL_RANK=(\d+)")


METRICS = ("training_loss", "training_accuracy", "validation_loss", "validation_accuracy")


def test_the_ddp_script_runs_as_one_process_too(users, tmp_path, monkeypatch):
    """Run settings 1 x 1: the command runs in the worker (here inline), a process group of one."""
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    owner = users["owner"]
    run_headless(trained_and_scored("ddp_train", digits_dataset(tmp_path, owner)), tmp_path, owner)
    run = Run.objects.get()
    assert run.status == statuses.COMPLETED
    text = (logs_of(run) / "70_driver_log.txt").read_text()
    found = ENVIRONMENT.search(text)
    assert found and found.group(1) == "127.0.0.1" and found.groups()[2:] == ("0", "1", "0", "0"), text[:3000]
    assert "process group: rank 0 of 1" in text and "60 of 60 training images" in text, text[:3000]
    assert not list(logs_of(run).glob("70_driver_log_*.txt"))
    assert metric_steps(run) == {name: [1, 2] for name in METRICS}  # its ##metric lines
    assert check_model_and_scores(run)["world_size"] == 1


@pytest.fixture(scope="module")
def two_workers(django_db_setup, django_db_blocker):
    # OMP_WAIT_POLICY: idle OpenMP threads sleep instead of spinning on the cores the ranks share
    env = {"DISTRIBUTED_PORTS": f"{PORTS[0]}-{PORTS[-1]}", "DISTRIBUTED_START_SECONDS": "30",
           "WORKER_CPUS": str(max(os.cpu_count() or 1, 2)), "OMP_WAIT_POLICY": "PASSIVE", "OMP_NUM_THREADS": "1"}
    with django_db_blocker.unblock():
        workers = [CeleryWorker(name, concurrency=2, log_dir=TEST_DATA, extra_env=env) for name in ("ddp-a", "ddp-b")]
        for w in workers:
            w.wait_ready()
    yield workers
    # both asked at once, each main process alone (TERM to a pool process too may leave the main
    # process hanging in its exit: it then took the 20 s of `end` before its kill)
    stop_all(workers)


@pytest.fixture
def workers(two_workers, transactional_db):
    return registered(two_workers)


@pytest.mark.parametrize(("nodes", "processes"), [(1, 2), (2, 1)])
def test_the_ddp_script_runs_on_two_real_workers_with_a_driver_log_per_rank(workers, users, tmp_path, nodes, processes):
    owner = users["owner"]
    doc = trained_and_scored("ddp_train", digits_dataset(tmp_path, owner),
                             run_settings={"node_count": nodes, "process_count_per_node": processes})
    started = time.monotonic()
    run = wait_for_run(runs.submit(owner, doc).id, timeout=240)
    train = run.nodes.get(node_id="train")
    assert run.status == statuses.COMPLETED, {n.node_id: n.error for n in run.nodes.all() if n.error}
    print(f"ddp_train {nodes} x {processes}: {time.monotonic() - started:.0f} s")

    launches = list(NodeLaunch.objects.filter(noderun=train))
    assert len(launches) == nodes and all(x.status == "exited" and x.exit_code == 0 for x in launches)
    if nodes == 2:  # one worker is one node
        assert sorted(x.worker.hostname for x in launches) == sorted(w.hostname for w in workers)
    logs = logs_of(run)
    assert (logs / "70_mpi_log.txt").is_file()
    masters = set()
    for rank in (0, 1):
        text = (logs / f"70_driver_log_{rank}.txt").read_text()
        found = ENVIRONMENT.search(text)
        assert found, text[:3000]
        master_addr, master_port, node_rank, world, got_rank, local_rank = found.groups()
        masters.add((master_addr, master_port))
        expected_node, expected_local = (rank, 0) if nodes == 2 else (0, rank)
        assert (int(node_rank), int(world), int(got_rank), int(local_rank)) == (expected_node, 2, rank, expected_local), \
            found.group(0)
        assert f"process group: rank {rank} of 2" in text and "backend gloo" in text, text[:3000]
        assert f"rank {rank}: epoch 2/2" in text and "30 of 60 training images" in text, text[-3000:]
        assert ("rank 0 wrote the model" in text) == (rank == 0)
    assert len(masters) == 1  # one rendezvous for both
    # rank 0's ##metric lines, once per epoch (rank 1's are not counted)
    assert metric_steps(run) == {name: [1, 2] for name in METRICS}
    info = check_model_and_scores(run)
    assert info["world_size"] == 2
    assert not Worker.objects.filter(reserved_by__isnull=False).exists()


@pytest.mark.parametrize(("nodes", "processes"), [(2, 1), (1, 2)])
def test_the_originals_per_node_launch_command_runs_unchanged_on_real_workers(workers, users, tmp_path, nodes, processes):
    """Issue 29: `python -m torch.distributed.launch --nnodes .. --node_rank $NODE_RANK --master_addr
    $MASTER_ADDR --master_port $MASTER_PORT --use_env ddp_train.py` (examples/components/ddp_train_per_node)
    failed with "invalid int value: '$NODE_RANK'". 2 x 1: each worker runs the command once, with its own
    NODE_RANK, and PyTorch's launcher starts its process; 1 x 2: one worker runs it once and the launcher
    starts both processes; one process group of two either way. Its inputs are
    ImageFolder trees of links (`layout: image_folder`), read by the script's torchvision ImageFolder."""
    owner = users["owner"]
    doc = trained_and_scored("ddp_train_per_node", digits_dataset(tmp_path, owner),
                             run_settings={"node_count": nodes, "process_count_per_node": processes})
    run = wait_for_run(runs.submit(owner, doc).id, timeout=240)
    assert run.status == statuses.COMPLETED, {n.node_id: n.error for n in run.nodes.all() if n.error}
    train = run.nodes.get(node_id="train")
    launches = list(NodeLaunch.objects.filter(noderun=train))
    assert len(launches) == nodes and all(x.status == "exited" and x.exit_code == 0 for x in launches)
    if nodes == 2:
        assert sorted(x.worker.hostname for x in launches) == sorted(w.hostname for w in workers)
    logs = logs_of(run)
    assert "per-node launch: one command per node" in (logs / "70_mpi_log.txt").read_text()
    texts = [(logs / f"70_driver_log_{n}.txt").read_text() for n in range(nodes)]  # one log per node: all its processes
    assert not (logs / f"70_driver_log_{nodes}.txt").exists()
    masters = set()
    for rank in (0, 1):
        node_rank, local_rank = (rank, 0) if nodes == 2 else (0, rank)
        text = texts[node_rank]
        assert f"node {node_rank} of {nodes} (per-node launch: its command starts the node's {processes} processes)" in text
        found = [m.groups() for m in ENVIRONMENT.finditer(text) if m.group(5) == str(rank)]
        assert len(found) == 1, text[:3000]
        master_addr, master_port, got_node, world, _, got_local = found[0]
        masters.add((master_addr, master_port))
        assert (int(got_node), int(world), int(got_local)) == (node_rank, 2, local_rank), found
        assert f"process group: rank {rank} of 2" in text and f"rank {rank}: epoch 2/2" in text, text[-3000:]
    assert len(masters) == 1  # node 0's address and port for every process
    assert "input 'Training data': 60 images as an ImageFolder tree of 10 class folders (links)" in \
        (logs / "70_driver_log.txt").read_text()
    assert metric_steps(run) == {name: [1, 2] for name in METRICS}
    assert check_model_and_scores(run)["world_size"] == 2
