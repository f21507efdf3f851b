"""Sync BatchNorm (Train PyTorch Model, distributed runs): two processes with half a batch each
train as one process with the whole batch, on CPUs (Gloo), where torch's own SyncBatchNorm has
no kernel."""
import json
import os
import subprocess
import sys

import pytest

from modules.train_pytorch_model import training_argv
from tests.conftest import ROOT
from training import train


def test_two_processes_with_sync_batchnorm_compute_what_one_process_computes_on_the_whole_batch(tmp_path):
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
               "-m", "tests.training.sync_bn_check", str(tmp_path)]
    done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    for rank in (0, 1):
        result = json.loads((tmp_path / f"rank-{rank}.json").read_text())
        assert result["kinds"] == ["GlobalBatchNorm"]
        assert result["output"] < 1e-5 and result["gradients"] < 1e-5 and result["running"] < 1e-5, result


@pytest.mark.parametrize("on", [True, False])
def test_the_module_parameter_reaches_the_training_command_line(on):
    params = {"epochs": 1, "batch_size": 4, "warmup_step_number": 0, "learning_rate": 0.1, "random_seed": 1,
              "patience": 1, "print_frequency": 0, "sync_batchnorm": on}
    args = train.get_args_parser().parse_args(training_argv("m", "t", "v", "o", params))
    assert args.sync_bn is on
