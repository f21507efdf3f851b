"""Train PyTorch Model with Node count x Process count per node, through the designer on two
real Celery workers: the digits example (scikit-learn's digits, 32x32, ResNet-18 from scratch).

2 x 1 (one process on each worker) reaches the accuracy of one process with the same global batch
size (after the same number of epochs, within the spread that training has with nothing but the
seed changed: see GAP below); 1 x 2 runs end to end. Both write a driver log per rank.
"""
import io
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from django.core.management import call_command

from designer.pipelines.models import NodeLaunch
from designer.pipelines.runs import service as runs
from sdk.formats.image_directory import read_path
from tests.conftest import ROOT, wait_for_run
from tests.imagesets import digits_folder
from tests.runs.test_distributed import no_process_left, two_workers, workers  # noqa: F401 - fixtures
from training import train

# The accuracy comparison is a property of the training, not of the services: it runs in the
# embedded pass only; 1 x 2 end to end also runs on PostgreSQL and Redis (the gang start across
# workers over Redis is tested on both by tests/runs/test_distributed.py).
pytestmark = [pytest.mark.django_db(transaction=True)]

EPOCHS = 6
GLOBAL_BATCH = 32
# Validation top-1 after the last epoch, 2 x 1 minus one process, measured by
# `bench/distributed_accuracy.py` over seeds 1-5 on this test's data and recipe (450 validation
# images: one image = 0.22 points): mean +0.76 points, standard deviation 0.95, range -0.67 to
# +1.56; one process alone moves with the seed by 0.62 points (sd). Before train.drop_last, each
# epoch ended with a BatchNorm step over 2 images per process and 2 x 1 reached 81% against 94%
# (the 90.0% of issue 10). What is left is the spread of two training runs: the test allows the gap
# within mean -/+ 3 sd (-2.10 to +3.61), rounded outwards to half points.
GAP = (-0.025, 0.04)
TRAIN = {"epochs": EPOCHS, "warmup_step_number": 20, "learning_rate": 0.05, "random_seed": 1, "patience": EPOCHS,
         "print_frequency": 10}


def digits_pipeline(dataset_id: int, nodes: int, processes: int, **train) -> dict:
    """examples/digits.json up to Train PyTorch Model, with these run settings."""
    doc = json.loads((ROOT / "examples" / "digits.json").read_text())
    doc["nodes"] = [n for n in doc["nodes"] if n["id"] not in ("score", "evaluate")]
    doc["links"] = [x for x in doc["links"] if x["to"]["node"] not in ("score", "evaluate")]
    for n in doc["nodes"]:
        if n["id"] == "dataset":
            n["parameters"]["dataset"] = dataset_id
        if n["id"] == "split":
            n["parameters"]["fraction"] = 0.75
        if n["id"] == "train":
            n["parameters"].update({**TRAIN, "batch_size": GLOBAL_BATCH // (nodes * processes), **train})
            n["run_settings"] = {"node_count": nodes, "process_count_per_node": processes}
    return doc


def add_digits(owner, folder, per_class: int | None = None) -> int:
    """scikit-learn's digits (all, or `per_class` of each) added as `owner`'s dataset: its id."""
    out = io.StringIO()
    call_command("add_dataset", str(digits_folder(folder, per_class=per_class)), owner=owner.username, stdout=out)
    return int(out.getvalue())


@pytest.fixture
def digits(users, tmp_path):
    return add_digits(users["owner"], tmp_path / "digits")


def trained(run) -> tuple[dict, Path]:
    nr = run.nodes.get(node_id="train")
    assert run.status == "completed", nr.error
    out = Path(nr.outputs["trained_model"])
    return yaml.safe_load((out / "model.yaml").read_text()), Path(nr.outputs["trained_model"]).parent / "logs"


def one_process_baseline(run, out: Path) -> dict:
    """The same training code, data, model and global batch size, in one process."""
    nodes = {n.node_id: n for n in run.nodes.all()}
    argv = ["--model-dir", nodes["resnet"].outputs["untrained_model"],
            "--train-dir", nodes["apply_train"].outputs["transformed_image_directory"],
            "--val-dir", nodes["apply_val"].outputs["transformed_image_directory"], "--output-dir", str(out),
            "--epochs", str(EPOCHS), "--batch-size", str(GLOBAL_BATCH), "--warmup-steps", "20", "--lr", "0.05",
            "--seed", "1", "--patience", str(EPOCHS), "--print-freq", "0"]
    # passive OpenMP waiting: threads that spin on a busy machine's shared cores slow training tenfold
    env = {**os.environ, "OMP_NUM_THREADS": str(os.cpu_count() or 1), "OMP_WAIT_POLICY": "PASSIVE", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "training.train", *argv], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=1200, check=False)  # 75 s on a quiet 2-core machine
    assert done.returncode == 0, done.stderr[-3000:]
    print(done.stdout)
    return yaml.safe_load((out / "model.yaml").read_text())


@pytest.mark.timeout(2400)  # two trainings of 6 epochs: minutes each on a machine shared by five engineers
def test_two_nodes_of_one_process_train_as_well_as_one_process(workers, users, digits, tmp_path):  # noqa: F811
    run = wait_for_run(runs.submit(users["owner"], digits_pipeline(digits, 2, 1)).id, timeout=1200)
    model, logs = trained(run)
    nr = run.nodes.get(node_id="train")
    assert len({x.worker for x in NodeLaunch.objects.filter(noderun=nr)}) == 2
    for rank in (0, 1):
        text = (logs / f"70_driver_log_{rank}.txt").read_text()
        assert f"rank {rank} of 2" in text
    rank0 = (logs / "70_driver_log_0.txt").read_text()
    assert "2 process(es)" in rank0 and f"Epoch {EPOCHS}:" in rank0 and "Epoch" not in (logs / "70_driver_log_1.txt").read_text()
    # each process takes half the training set (DistributedSampler), BATCH images a step
    n_train = len(read_path(run.nodes.get(node_id="apply_train").outputs["transformed_image_directory"]).items)
    half, batch = math.ceil(n_train / 2), GLOBAL_BATCH // 2
    steps = half // batch + (not train.drop_last(half, batch))  # a last batch under half a batch is left out
    assert set(re.findall(r"Epoch: \[\d+\] \[\d+/(\d+)\]", rank0)) == {str(steps)}, (n_train, rank0[:3000])
    top1 = [e.data for e in run.events.filter(node_id="train", type="metric") if e.data["name"] == "validation_top1_accuracy"]
    assert [m["step"] for m in top1] == list(range(1, model["epochs_run"] + 1))  # relayed from rank 0, once each
    one = one_process_baseline(run, tmp_path / "one")
    two_last, one_last = model["history"][-1]["validation_top1_accuracy"], one["history"][-1]["validation_top1_accuracy"]
    print(f"validation top-1 after {EPOCHS} epochs: 2 processes {100 * two_last:.2f}%, 1 process {100 * one_last:.2f}% "
          f"(kept: {100 * model['validation_top1_accuracy']:.2f}% at epoch {model['best_epoch']}, "
          f"{100 * one['validation_top1_accuracy']:.2f}% at epoch {one['best_epoch']})")
    assert model["epochs_run"] == one["epochs_run"] == EPOCHS
    assert GAP[0] <= two_last - one_last <= GAP[1]
    no_process_left(run)


@pytest.mark.timeout(1200)
@pytest.mark.production
def test_one_node_of_two_processes_trains_end_to_end_with_sync_batchnorm(workers, users, digits):  # noqa: F811
    run = wait_for_run(runs.submit(users["owner"], digits_pipeline(digits, 1, 2, epochs=1, sync_batchnorm=True)).id,
                       timeout=900)
    model, logs = trained(run)
    assert "Sync BatchNorm: batch-norm statistics over the global batch of 32 images (2 processes x 16)" in (
        logs / "70_driver_log_0.txt").read_text()
    assert model["epochs_run"] == 1 and (logs.parent / "trained_model" / "model.pt").is_file()
    assert not (logs.parent / "trained_model" / "metrics.jsonl").exists()
    assert {p.name for p in logs.iterdir()} >= {"70_driver_log_0.txt", "70_driver_log_1.txt", "70_mpi_log.txt"}
    no_process_left(run)
