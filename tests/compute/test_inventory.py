"""A worker's hardware as its heartbeat reports it (designer/pipelines/compute/inventory.py): the GPUs
`nvidia-smi` lists, and the compute target a worker joins when WORKER_COMPUTE_TARGET is empty.
With real workers (a fake nvidia-smi, the real CUDA probe): tests/compute/test_compute_targets.py."""
import pytest

from designer.pipelines.compute import inventory
from designer.pipelines.compute.inventory import Inventory, parse_gpus

H100 = {"index": 0, "name": "NVIDIA H100 80GB HBM3", "memory_mb": 81559}


def test_nvidia_smis_lines_become_the_gpus_and_what_is_not_a_gpu_is_left_out():
    text = ("0, NVIDIA H100 80GB HBM3, 81559\n"
            "1, Some, Odd GPU, [N/A]\n"
            "WARNING: infoROM is corrupted at gpu 0000:00:04.0\n\n")
    assert parse_gpus(text) == [H100, {"index": 1, "name": "Some, Odd GPU", "memory_mb": None}]
    assert parse_gpus("") == []


def test_a_worker_joins_its_configured_target_else_gpu_when_its_gpus_work_else_cpu():
    works = Inventory((H100,), usable=1)
    broken = Inventory((H100,), usable=0, cuda_problem="CUDA cannot start: RuntimeError: no driver")
    assert (works.target(""), broken.target(""), Inventory().target("")) == ("gpu", "cpu", "cpu")
    assert broken.target("gpu") == "gpu" and works.target("train") == "train"  # as told: the Compute page flags it
    assert works.offered == [H100] and broken.offered == []


@pytest.mark.gpu
def test_on_a_machine_with_a_gpu_cuda_starts_and_every_gpu_is_offered():
    listed = inventory.list_gpus()
    if not listed:
        pytest.skip("no GPU listed by nvidia-smi on this machine")
    found = inventory.take()
    assert found.cuda_problem == "" and found.usable == len(listed) and found.target("") == "gpu", found
    assert all(g["name"] and g["memory_mb"] for g in found.listed), found
