"""What each process of a distributed job is told about GPUs (no GPU exists here: the workers'
rows say what they offer, as their heartbeats would): NCCL with `--device cuda` and the node's GPUs
in CUDA_VISIBLE_DEVICES when every node has GPUs; Gloo with `--device cpu` and no GPU visible
otherwise, so that a CPU job on a GPU machine never takes a GPU another job uses."""
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from designer.engine.executor import DistributedLaunchError
from designer.pipelines.models import Worker
from designer.pipelines.runs.launchers import specs
from designer.pipelines.runs.launchers.gang import Gang
from sdk.context import DistributedJob
from supervision import gpus


def _spec(tmp_path: Path, job: DistributedJob, gpus: tuple[int, ...], p: int = 2) -> list[dict]:
    nodes = [Worker(hostname=f"w{i}@host", cpus=16, gpus=g, address=f"10.0.0.{i}") for i, g in enumerate(gpus)]
    nr = SimpleNamespace(pk=7, run_id=1, node_id="train")
    gang = Gang(nr, nodes[0], "Train PyTorch Model", len(nodes), p, tmp_path / "logs")
    return [specs.node_spec(gang, job, nodes, i, "10.0.0.0:29500") for i in range(len(nodes))]


def _training_job() -> DistributedJob:
    return DistributedJob("training.train", ["--epochs", "1"], gpu_argv=["--device", "cuda"], cpu_argv=["--device", "cpu"])


def test_a_training_on_gpu_workers_uses_nccl_and_the_node_gpus_of_its_processes(tmp_path, settings):
    settings.ARTIFACT_ROOT = str(tmp_path)
    for spec in _spec(tmp_path, _training_job(), gpus=(8, 4), p=4):
        assert spec["command"][-2:] == ["--device", "cuda"]
        assert spec["env"]["CUDA_VISIBLE_DEVICES"] == "0,1,2,3"  # local rank r uses cuda:r


def test_a_training_where_one_node_has_no_gpu_runs_every_process_on_cpus_with_no_gpu_visible(tmp_path, settings):
    settings.ARTIFACT_ROOT = str(tmp_path)
    for spec in _spec(tmp_path, _training_job(), gpus=(8, 0)):
        assert spec["command"][-2:] == ["--device", "cpu"]
        assert spec["env"]["CUDA_VISIBLE_DEVICES"] == ""


def test_a_components_processes_see_the_gpus_of_their_node_and_nothing_is_added_to_its_command(tmp_path, settings):
    settings.ARTIFACT_ROOT = str(tmp_path)
    job = DistributedJob("supervision.command", ["--cwd", "code", "--", "python", "train.py"], gpu_argv=[])
    [spec] = _spec(tmp_path, job, gpus=(2,))
    assert spec["command"][-5:] == ["--cwd", "code", "--", "python", "train.py"]
    assert spec["env"]["CUDA_VISIBLE_DEVICES"] == "0,1"
    [spec] = _spec(tmp_path, job, gpus=(0,))
    assert spec["env"]["CUDA_VISIBLE_DEVICES"] == ""


def test_a_node_starts_on_the_gpus_no_other_job_of_its_machine_holds_and_gives_them_back(tmp_path, settings, monkeypatch):
    """Every node of a GPU job used GPUs 0 .. P-1 whatever else ran there. Started, a node holds
    P free GPUs of its machine (supervision/gpus.py) and its processes see those; when they end,
    they are free again. None free within DISTRIBUTED_START_SECONDS: the node says so."""
    monkeypatch.setenv(gpus.LOCK_DIR_ENV, str(tmp_path / "locks"))
    monkeypatch.setenv(gpus.MACHINE_GPUS_ENV, "3")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    settings.DISTRIBUTED_START_SECONDS = 0.3
    spec = {"command": [sys.executable, "-c", "import os; print('sees', os.environ['CUDA_VISIBLE_DEVICES'])"],
            "env": {"CUDA_VISIBLE_DEVICES": "0,1"}, "mpi_log": str(tmp_path / "70_mpi_log.txt"), "prefix": "node 1 (w1)"}
    other_job = gpus.try_lease(1, total=3)  # GPU 0
    node = specs.process_of(spec)
    node.proc.wait(timeout=60)
    assert node.stop() == 0 and "node 1 (w1): sees 1,2" in (tmp_path / "70_mpi_log.txt").read_text()
    assert gpus.try_lease(2, total=3).indexes == [1, 2]  # given back
    with pytest.raises(DistributedLaunchError, match=r"node 1 \(w1\): 2 of this machine's 3 GPU\(s\) were not free within"):
        specs.process_of(spec)
    other_job.release()
