"""Training is distributed properly (issue 5, item 3), seen from the processes themselves: two
processes of training.train under torchrun (Gloo on CPUs, each under supervision.rank with its own
driver log, as the designer starts them), tiny digits, two epochs. tests/training/traced_train.py
records what each rank read and computed."""
import json
import math
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT
from tests.modules.model_helpers import digits_split, image_dir, small_recipe, untrained

BATCH = 8
EPOCHS = 2
SEED = 1


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    """Run the two processes once; return where they left their traces, outputs and logs."""
    root = tmp_path_factory.mktemp("recipe")
    train, val = digits_split(root / "digits", per_class=8)  # 60 training and 20 validation images
    dirs = {"model": untrained(root / "resnet").path, "train": image_dir(root / "t", train, small_recipe()).path,
            "val": image_dir(root / "v", val, small_recipe(), "inference").path}
    argv = ["--model-dir", dirs["model"], "--train-dir", dirs["train"], "--val-dir", dirs["val"],
            "--output-dir", root / "out", "--work-dir", root / "work", "--epochs", EPOCHS, "--batch-size", BATCH,
            "--lr", "0.05", "--seed", SEED, "--patience", EPOCHS + 1, "--print-freq", "1", "--threads", "1"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT),
           "DESIGNER_RANK_LOG_DIR": str(root / "logs"), "DESIGNER_RANK_STATE_DIR": str(root / "state")}
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
               "-m", "supervision.rank", "tests.training.traced_train", str(root / "trace"), *map(str, argv)]
    done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, timeout=240, check=False)
    logs = {r: (root / "logs" / f"70_driver_log_{r}.txt").read_text() for r in (0, 1)}
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:] + logs[0][-2000:] + logs[1][-2000:]
    trace = {r: json.loads((root / "trace" / f"rank-{r}.json").read_text())["epochs"] for r in (0, 1)}
    return {"root": root, "trace": trace, "logs": logs, "n_train": 60, "n_val": 20}


def test_the_sampler_gives_each_rank_its_own_half_of_the_training_set_every_epoch(traced):
    n = traced["n_train"]
    for epoch in range(EPOCHS):
        mine, theirs = (traced["trace"][r][epoch]["train"] for r in (0, 1))
        assert len(mine) == len(theirs) == n // 2
        assert not set(mine) & set(theirs)  # disjoint
        assert sorted(mine + theirs) == list(range(n))  # together: the whole training set, each image once


def test_the_epoch_is_set_on_the_sampler_so_the_order_changes_between_epochs(traced):
    for r in (0, 1):
        first, second = (traced["trace"][r][e]["train"] for e in range(EPOCHS))
        assert first != second and set(first) != set(second)  # another shuffle, hence another half


def test_steps_per_epoch_are_the_training_set_over_processes_and_batch_size(traced):
    steps = math.ceil(traced["n_train"] / 2 / BATCH)  # 4
    for r in (0, 1):
        assert [e["steps"] for e in traced["trace"][r]] == [steps] * EPOCHS
    assert f"Epoch: [1] [{steps}/{steps}]" in traced["logs"][0] and f"[{steps + 1}/" not in traced["logs"][0]


def test_validation_is_sharded_and_the_reported_figures_are_those_of_the_whole_validation_set(traced):
    n = traced["n_val"]
    reported = [json.loads(line) for line in (traced["root"] / "out" / "rank-0" / "metrics.jsonl").read_text().splitlines()]
    for epoch in range(EPOCHS):
        mine, theirs = (traced["trace"][r][epoch]["val"] for r in (0, 1))
        assert len(mine) == len(theirs) == n // 2 and sorted(mine + theirs) == list(range(n))
        whole = traced["trace"][0][epoch]["whole_val"]
        figures = {m["name"]: m["value"] for m in reported if m["step"] == epoch + 1}
        # half the images on each rank, summed across both: the figure of the whole set
        assert figures["validation_top1_accuracy"] == pytest.approx(whole["validation_top1_accuracy"], abs=1e-9)
        assert figures["validation_loss"] == pytest.approx(whole["validation_loss"], rel=1e-5)


def test_the_ranks_train_one_model_with_their_own_seeds(traced):
    t = traced["trace"]
    assert [e["seed"] for e in t[0]] == [SEED] * EPOCHS and [e["seed"] for e in t[1]] == [SEED + 1] * EPOCHS
    for epoch in range(EPOCHS):  # DistributedDataParallel: the same weights on both after every epoch
        assert t[0][epoch]["weights"] == pytest.approx(t[1][epoch]["weights"], rel=1e-9)
    assert t[0][0]["weights"] != pytest.approx(t[0][1]["weights"], rel=1e-9)  # and they did train


def test_only_rank_0_logs_writes_metrics_and_saves(traced):
    out, work = traced["root"] / "out", traced["root"] / "work"
    assert {"model.pt", "model.yaml", "metrics.jsonl"} <= {p.name for p in (out / "rank-0").iterdir()}
    assert (work / "rank-0" / "checkpoint.pth").is_file()
    assert not [p for p in (out / "rank-1").rglob("*") if p.is_file()]
    assert not [p for p in (work / "rank-1").rglob("*") if p.is_file()]
    rank0, rank1 = traced["logs"][0], traced["logs"][1]
    assert "2 process(es)" in rank0 and f"Epoch {EPOCHS}:" in rank0 and "kept the weights of epoch" in rank0
    assert rank1.startswith("rank 1 of 2 ")
    # each process says which device it uses, in its own log; the rest is rank 0's alone
    assert "rank 0: CPU: " in rank0 and "rank 1: CPU: " in rank1 and "rank 0: CPU" not in rank1
    for words in ("2 process(es)", "images, ", "Epoch", "kept the weights", "validation"):
        assert words not in rank1, rank1
