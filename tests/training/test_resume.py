"""A training whose worker dies goes on from its last checkpoint on another worker, and ends exactly
as the same training would have without the loss: the digits example (ResNet-18 from scratch, 5
epochs, one process on CPUs), its worker killed (SIGKILL, every process) after its 3rd epoch, the
maintenance loop sending the node back to the queue, a second worker resuming it. Same seed, same
threads (one slot per worker): the same weights, bit for bit, and the same final metrics as the
uninterrupted run beside it."""
import re

import pytest
import torch
import yaml
from django.conf import settings

from designer.pipelines.models import Event
from designer.pipelines.runs import service as runs
from sdk.formats.model import TRAINED_STATE
from tests.conftest import TEST_DATA, wait_for_run
from tests.pipes import out_path
from tests.training.test_distributed_training import add_digits, digits_pipeline
from tests.workers import MaintenanceProcess

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.production, pytest.mark.timeout(900),
              pytest.mark.skipif(not settings.DATABASES["default"]["ENGINE"].endswith("postgresql"),
                                 reason="workers and the maintenance process beside them: make test's production pass")]

EPOCHS = 5


def epochs_reported(run) -> int:
    return Event.objects.filter(run=run, node_id="train", type="metric", data__name="validation_top1_accuracy").count()


def figures(logged: dict) -> dict:
    """What a training computes, without what a clock measures (images per second)."""
    return {k: v for k, v in logged.items() if "per_second" not in k}


def trained(run) -> tuple[dict, dict]:
    out = out_path(run.nodes.get(node_id="train").outputs["trained_model"])
    return yaml.safe_load((out / "model.yaml").read_text()), torch.load(out / TRAINED_STATE, map_location="cpu")


def test_a_training_whose_worker_is_killed_at_epoch_3_of_5_resumes_and_ends_as_if_never_interrupted(start_worker, users, tmp_path):
    owner = users["owner"]
    digits = add_digits(owner, tmp_path / "digits", per_class=60)
    doc = digits_pipeline(digits, 1, 1, epochs=EPOCHS, patience=EPOCHS, print_frequency=0, warmup_step_number=5)
    maintenance = MaintenanceProcess("beside", TEST_DATA)
    try:
        first = start_worker("first", concurrency=1)
        reference = wait_for_run(runs.submit(owner, doc).id, timeout=600)
        assert reference.status == "completed", {nr.node_id: nr.error for nr in reference.nodes.all()}

        run = runs.submit(owner, doc, regenerate={"train"})  # the shared nodes reused: the same inputs
        wait_for_run(run.id, timeout=600, until=lambda r: epochs_reported(r) >= 3 or r.finished)
        assert not run.nodes.filter(node_id="train", status="completed").exists(), "it ended before the kill"
        first.kill()
        start_worker("second", concurrency=1)
        run = wait_for_run(run.id, timeout=600)
        train = run.nodes.get(node_id="train")
        assert run.status == "completed" and train.attempt == 2, (train.status, train.error, train.attempts)
        assert "second" in train.worker_label and "first" in train.attempts[0]["worker"]
        log = (out_path(train.outputs["trained_model"]).parent / "logs").glob("*")
        text = "\n".join(p.read_text() for p in log)
        resumed = re.search(r"resumed from \S+ after epoch (\d)", text)
        assert resumed and 2 <= int(resumed.group(1)) < EPOCHS, text[-3000:]

        (expected, expected_state), (got, got_state) = trained(reference), trained(run)
        assert [figures(h) for h in got["history"]] == [figures(h) for h in expected["history"]]
        assert got["best_epoch"] == expected["best_epoch"]
        assert expected_state.keys() == got_state.keys()
        differ = [k for k in expected_state if not torch.equal(expected_state[k], got_state[k])]
        assert not differ, f"weights differ from the uninterrupted run's: {differ[:5]}"
        reference.refresh_from_db()
        run.refresh_from_db()
        assert figures(run.metrics) == figures(reference.metrics) and run.metrics
    finally:
        maintenance.end()


def test_a_rank_that_dies_restarts_the_jobs_processes_which_go_on_from_the_checkpoint(start_worker, users, tmp_path):
    """1 x 2 on one worker: rank 1 killed (SIGKILL) after the 2nd of 4 epochs; torchrun restarts
    both processes (an elastic restart, one of the node's Max retries), which go on from the last
    checkpoint, and the node completes on its first attempt."""
    import os
    import signal

    from designer.pipelines.runs import artifacts
    from supervision import launch

    owner = users["owner"]
    digits = add_digits(owner, tmp_path / "digits", per_class=30)
    start_worker("pair", concurrency=2)
    run = runs.submit(owner, digits_pipeline(digits, 1, 2, epochs=4, patience=4, print_frequency=0, warmup_step_number=5))
    wait_for_run(run.id, timeout=600, until=lambda r: epochs_reported(r) >= 2 or r.finished)
    ranks = artifacts.ranks_dir(artifacts.node_dir(run.id, "train"))
    os.kill(launch.rank_states(ranks)[1]["pid"], signal.SIGKILL)
    run = wait_for_run(run.id, timeout=600)
    train = run.nodes.get(node_id="train")
    assert run.status == "completed" and train.attempt == 1, (train.status, train.error)
    logs = out_path(train.outputs["trained_model"]).parent / "logs"
    rank0 = (logs / "70_driver_log_0.txt").read_text()
    assert re.search(r"resumed from \S+ (after epoch [23]|at step \d+ of epoch [23])", rank0), rank0[-3000:]
    model, _ = trained(run)
    assert [h["epoch"] for h in model["history"]] == [1, 2, 3, 4] and model["epochs_run"] == 4
