"""The machine's GPUs, each held by one job at a time (supervision/gpus.py): what decides which GPU a
job uses is plain locking, tested here on real processes; no GPU is needed to hand out indexes
(the GPU side, training/devices.py reading the index, runs in bench/gpu_checks.py on a GPU machine).
Before: every 1 x 1 training of a machine took GPU 0, and every distributed job GPUs 0 .. P-1."""
import os
import subprocess
import sys
import textwrap
import time

import pytest

from designer.engine import executor
from sdk.declarations import Module
from supervision import gpus
from tests.conftest import ROOT

HOLDER = textwrap.dedent("""\
    import sys, time
    from supervision import gpus
    held = gpus.lease(int(sys.argv[1]), total=int(sys.argv[2]), say=lambda t: print(t, flush=True))
    print("held", held.visible_devices, flush=True)
    time.sleep(600)
""")


@pytest.fixture
def locks(tmp_path, monkeypatch):
    monkeypatch.setenv(gpus.LOCK_DIR_ENV, str(tmp_path / "locks"))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    return tmp_path / "locks"


def holder(count: int, total: int, env_extra: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", HOLDER, str(count), str(total)], cwd=ROOT, text=True,
                            env={**os.environ, **(env_extra or {})}, stdout=subprocess.PIPE)


def test_jobs_of_one_machine_get_different_gpus_and_a_job_waits_until_one_is_freed_by_its_holders_end(locks):
    started = []
    try:
        started.append(first := holder(1, 2))
        assert first.stdout.readline().split() == ["held", "0"]
        started.append(second := holder(1, 2))
        assert second.stdout.readline().split() == ["held", "1"]  # not GPU 0 again
        assert gpus.try_lease(1, total=2) is None  # both held
        started.append(third := holder(1, 2))
        assert third.stdout.readline().strip() == "waiting for 1 of this machine's 2 GPU(s): other jobs are using them"
        first.kill()  # however a job ends, the kernel drops its locks
        first.wait()
        assert third.stdout.readline().split() == ["held", "0"]
    finally:
        for p in started:
            p.kill()
            p.wait()
            p.stdout.close()


def test_a_job_of_several_gpus_gets_them_together_or_none(locks):
    one = gpus.try_lease(1, total=4)
    assert one is not None and one.indexes == [0]
    three = gpus.try_lease(3, total=4)
    assert three is not None and three.indexes == [1, 2, 3] and three.visible_devices == "1,2,3"
    assert gpus.try_lease(1, total=4) is None
    three.release()
    with gpus.try_lease(2, total=4) as two:  # released at the end of the block
        assert two.indexes == [1, 2]
    assert gpus.try_lease(3, total=4).indexes == [1, 2, 3]


def test_a_worker_given_some_of_the_gpus_locks_them_by_their_machine_names(locks, monkeypatch):
    """Two workers with CUDA_VISIBLE_DEVICES=0,1 and 2,3 never wait for each other; one given 1,3 takes 1 first."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    held = gpus.try_lease(2, total=2)
    assert held.indexes == [0, 1] and held.visible_devices == "2,3"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    assert gpus.try_lease(2, total=2).visible_devices == "0,1"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1,3")
    assert gpus.try_lease(1, total=2) is None  # 1 and 3 are both held above


def test_more_gpus_than_the_machine_has_or_a_wait_that_runs_out_are_said_plainly(locks):
    with pytest.raises(gpus.NoFreeGPU, match=r"^3 GPU\(s\) asked for, but this machine has 2$"):
        gpus.lease(3, total=2)
    with gpus.lease(2, total=2):
        with pytest.raises(gpus.NoFreeGPU, match=r"1 of this machine's 2 GPU\(s\) were not free within 0.2 s"):
            gpus.lease(1, total=2, say=lambda text: None, wait=0.2)


class GpuToy(Module):
    kind = "gpu_toy"
    label = "GPU toy"
    category = "Tests"
    uses_gpu = True
    seen: list = []

    def run(self, ctx):
        GpuToy.seen.append((os.environ.get(gpus.GPU_ENV), gpus.try_lease(2, total=2), gpus.try_lease(1, total=2)))


def test_the_engine_holds_one_gpu_for_a_module_that_runs_on_one_and_names_it_in_the_log(locks, tmp_path, monkeypatch):
    monkeypatch.setenv(gpus.MACHINE_GPUS_ENV, "2")
    GpuToy.seen = []
    node_dir = tmp_path / "node"
    executor.execute(GpuToy, {"id": "n1", "kind": "gpu_toy"}, {}, node_dir, lambda event: None)
    env, both, other = GpuToy.seen[0]
    assert env == "0" and both is None and other.indexes == [1]  # GPU 0 was its own while it ran
    other.release()
    assert gpus.GPU_ENV not in os.environ and gpus.try_lease(2, total=2) is not None  # given back
    assert "holds GPU 0 of this machine's 2 while it runs (one job per GPU)" in (node_dir / "logs" / "70_driver_log.txt").read_text()
    monkeypatch.setenv(gpus.MACHINE_GPUS_ENV, "0")  # a CPU machine: nothing held, nothing said
    executor.execute(GpuToy, {"id": "n2", "kind": "gpu_toy"}, {}, tmp_path / "n2", lambda event: None)
    assert GpuToy.seen[1][0] is None


def test_a_job_waiting_for_a_gpu_can_be_cancelled(locks, tmp_path, monkeypatch):
    monkeypatch.setenv(gpus.MACHINE_GPUS_ENV, "1")
    started = time.monotonic()
    with gpus.lease(1, total=1):
        with pytest.raises(executor.Cancelled):
            executor.execute(GpuToy, {"id": "n1", "kind": "gpu_toy"}, {}, tmp_path / "node", lambda event: None,
                             cancelled=lambda: time.monotonic() - started > 0.5)
    assert "waiting for 1 of this machine's 1 GPU(s)" in (tmp_path / "node" / "logs" / "70_driver_log.txt").read_text()
