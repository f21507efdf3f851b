"""training.train as issue 5 will run it: a command line, under torchrun, ranks from the environment."""
import json
import os
import subprocess
import sys

import pytest
import yaml

from tests.conftest import ROOT
from tests.modules.model_helpers import digits_split, image_dir, small_recipe, untrained


@pytest.fixture(scope="module")
def dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli")
    train, val = digits_split(root / "digits", per_class=8)
    return {"--model-dir": untrained(root / "resnet").path, "--train-dir": image_dir(root / "t", train, small_recipe()).path,
            "--val-dir": image_dir(root / "v", val, small_recipe(), "inference").path}


def command(dirs, out, *extra):
    args = [str(x) for kv in dirs.items() for x in kv]
    return [*args, "--output-dir", str(out), "--epochs", "1", "--lr", "0.01", "--label", "Train PyTorch Model", *extra]


ENV = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}


def test_two_processes_under_torchrun_train_one_model(tmp_path, dirs):
    out = tmp_path / "model"
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
    done = subprocess.run([*torchrun, "-m", "training.train", *command(dirs, out)], env=ENV, cwd=ROOT,
                          capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "2 process(es)" in done.stdout and done.stdout.count("Epoch 1:") == 1  # rank 0 logs, alone
    spec = yaml.safe_load((out / "model.yaml").read_text())
    assert spec["best_epoch"] == 1 and (out / "model.pt").is_file()
    names = [json.loads(line)["name"] for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert names.count("validation_top1_accuracy") == 1


def test_a_users_mistake_is_one_line_not_a_traceback(tmp_path, dirs):
    done = subprocess.run([sys.executable, "-m", "training.train", *command(dirs, tmp_path / "m", "--batch-size", "999")],
                          env=ENV, cwd=ROOT, capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode == 1
    assert done.stderr.strip().startswith("NotInRangeValueError: Train PyTorch Model: Batch size 999")
    assert "Traceback" not in done.stderr
