"""Train PyTorch Model with Node count x Process count per node, through the designer on two
real Celery workers: the digits example (scikit-learn's digits, 32x32, ResNet-18 from scratch).

2 x 1 (one process on each worker) reaches the accuracy of one process with the same global batch
size (after the same number of epochs, within the spread that training has with nothing but the
seed changed: ONE_PROCESS_TOP1 below, measured by a benchmark); 1 x 2 runs end to end. Both write a
driver log per rank.
"""
import io
import json
import math
import re
from pathlib import Path

import pytest
import yaml
from django.core.management import call_command

from designer.pipelines.models import NodeLaunch
from designer.pipelines.runs import service as runs
from sdk.formats.image_directory import read_path
from tests.conftest import ROOT, wait_for_run
from tests.imagesets import digits_folder
from tests.pipes import out_path
from tests.runs.test_distributed import CPUS, no_process_left, two_workers, workers  # noqa: F401 - fixtures
from training import train

# The accuracy comparison is a property of the training, not of the services: it runs in the
# embedded pass only; 1 x 2 end to end also runs on PostgreSQL and Redis (the gang start across
# workers over Redis is tested on both by tests/runs/test_distributed.py).
pytestmark = [pytest.mark.django_db(transaction=True)]

EPOCHS = 6
GLOBAL_BATCH = 32
# One process's validation top-1 after the last epoch on this test's data and recipe (450 validation
# images: one image = 0.22 points), measured by `bench/distributed_accuracy.py` over seeds 1-5,
# twice (2026-11-27, two sessions: 97.91% with sd 0.62, 97.87% with sd 0.34); 2 x 1 there: 98.13%
# (sd 0.34, 97.78% to 98.67%), its gap to one process of the same seed mean +0.27 points, sd 0.58.
# The test trains 2 x 1 and compares it with that measured figure instead of training one process
# again beside it (75 s of the suite): it allows 2 x 1 down to 2.5 points under one process, the
# lower end of the window the same-seed comparison allowed (mean - 3 sd of the gap, rounded out).
# Before train.drop_last, each epoch ended with a BatchNorm step over 2 images per process and
# 2 x 1 reached 81% against 94% (the 90.0% of issue 10).
ONE_PROCESS_TOP1 = 0.979
BELOW = 0.025
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
    out = out_path(nr.outputs["trained_model"])
    return yaml.safe_load((out / "model.yaml").read_text()), out_path(nr.outputs["trained_model"]).parent / "logs"


@pytest.mark.timeout(1800)  # a training of 6 epochs: minutes on a machine shared by five engineers
def test_two_nodes_of_one_process_train_as_well_as_one_process(workers, users, digits):  # noqa: F811
    run = wait_for_run(runs.submit(users["owner"], digits_pipeline(digits, 2, 1)).id, timeout=1200)
    model, logs = trained(run)
    nr = run.nodes.get(node_id="train")
    assert len({x.worker for x in NodeLaunch.objects.filter(noderun=nr)}) == 2
    for rank in (0, 1):
        text = (logs / f"70_driver_log_{rank}.txt").read_text()
        assert f"rank {rank} of 2" in text
    rank0 = (logs / "70_driver_log_0.txt").read_text()
    # each rank's torch threads: its share of a worker's cores (2 slots, CPUS cores; supervision/launch.py)
    assert f"2 process(es), {max(1, CPUS // 2)} thread(s) each" in rank0 and f"Epoch {EPOCHS}:" in rank0 and "Epoch" not in (logs / "70_driver_log_1.txt").read_text()
    # each process takes half the training set (DistributedSampler), BATCH images a step
    n_train = len(read_path(out_path(run.nodes.get(node_id="apply_train").outputs["transformed_image_directory"])).items)
    half, batch = math.ceil(n_train / 2), GLOBAL_BATCH // 2
    steps = half // batch + (not train.drop_last(half, batch))  # a last batch under half a batch is left out
    assert set(re.findall(r"Epoch: \[\d+\] \[\d+/(\d+)\]", rank0)) == {str(steps)}, (n_train, rank0[:3000])
    top1 = [e.data for e in run.events.filter(node_id="train", type="metric") if e.data["name"] == "validation_top1_accuracy"]
    assert [m["step"] for m in top1] == list(range(1, model["epochs_run"] + 1))  # relayed from rank 0, once each
    two_last = model["history"][-1]["validation_top1_accuracy"]
    print(f"validation top-1 after {EPOCHS} epochs: 2 processes {100 * two_last:.2f}% (kept: "
          f"{100 * model['validation_top1_accuracy']:.2f}% at epoch {model['best_epoch']}); one process, measured: "
          f"{100 * ONE_PROCESS_TOP1:.1f}%")
    assert model["epochs_run"] == EPOCHS
    assert two_last >= ONE_PROCESS_TOP1 - BELOW, f"2 x 1 reached {100 * two_last:.2f}%, one process {100 * ONE_PROCESS_TOP1:.1f}%"
    no_process_left(run)


@pytest.mark.timeout(1200)
@pytest.mark.production
def test_one_node_of_two_processes_trains_end_to_end_with_sync_batchnorm(workers, users, tmp_path):  # noqa: F811
    few = add_digits(users["owner"], tmp_path / "digits", per_class=30)  # 225 to train: 7 steps of 16 on each rank
    run = wait_for_run(runs.submit(users["owner"], digits_pipeline(few, 1, 2, epochs=1, sync_batchnorm=True)).id,
                       timeout=900)
    model, logs = trained(run)
    assert "Sync BatchNorm: batch-norm statistics over the global batch of 32 images (2 processes x 16)" in (
        logs / "70_driver_log_0.txt").read_text()
    assert model["epochs_run"] == 1 and (logs.parent / "trained_model" / "model.pt").is_file()
    assert not (logs.parent / "trained_model" / "metrics.jsonl").exists()
    assert {p.name for p in logs.iterdir()} >= {"70_driver_log_0.txt", "70_driver_log_1.txt", "70_mpi_log.txt"}
    no_process_left(run)
