"""A real sweep of the digits example: Train PyTorch Model's learning rate swept on two workers,
each trial distributed (1 node x 2 processes); the shared nodes (Dataset, Convert, Split, the
transformations, ResNet) run once; a learning rate far too small is stopped by BanditPolicy
between epochs, through the stop file its torchrun ranks read, and keeps its best epoch; so is it
by MedianStoppingPolicy and TruncationSelectionPolicy with one process per trial."""
import time
from pathlib import Path

import pytest
import yaml

from designer.engine import statuses as st
from designer.pipelines import sweeps
from designer.pipelines.models import NodeRun
from sdk.formats.meta import read_meta
from tests.pipelines.test_distributed import no_process_left, two_workers, workers  # noqa: F401 - fixtures
from tests.training.test_distributed_training import digits, digits_pipeline  # noqa: F401 - fixtures

pytestmark = [pytest.mark.django_db(transaction=True)]

EPOCHS = 6
GOOD, POOR = 0.05, 0.0000005  # 100,000x too small: the batch-norm statistics alone learn something
SHARED = ("dataset", "convert", "split", "transform", "apply_train", "apply_val", "resnet")


def learning_rate_sweep(owner, digits, processes: int, epochs: int, policy: dict):  # noqa: F811
    """A grid of [GOOD, POOR] over Train PyTorch Model's learning rate, 1 node x `processes` per
    trial, both trials at once, to its end: (sweep, good trial, poor trial, what the trials say)."""
    doc = digits_pipeline(digits, 1, processes, epochs=epochs, patience=epochs)
    doc["parameters"] = [{"name": "learning_rate", "type": "float", "default": GOOD, "min": 1e-7, "max": 1.0}]
    next(n for n in doc["nodes"] if n["id"] == "train")["bindings"] = {"learning_rate": "learning_rate"}
    config = {"sampling": "grid", "parameter_space": [{"name": "learning_rate", "expression": "choice", "values": [GOOD, POOR]}],
              "policy": policy, "primary_metric_name": "validation_top1_accuracy", "primary_metric_goal": "maximize",
              "max_total_runs": 2, "max_concurrent_runs": 2}
    sweep = sweeps.start(owner, doc, config)
    deadline = time.monotonic() + 1700
    while not sweep.finished:
        assert time.monotonic() < deadline, list(sweep.trials.values("number", "status", "epochs"))
        time.sleep(1)
        sweep.refresh_from_db()
    seen = list(sweep.trials.values("values", "status", "epochs", "value", "stopped_at_step", "error"))
    return sweep, sweep.trials.get(values={"learning_rate": GOOD}), sweep.trials.get(values={"learning_rate": POOR}), seen


@pytest.mark.timeout(1800)  # two distributed trainings side by side on a shared 2-core machine
def test_a_bandit_sweep_of_the_digits_stops_the_poor_learning_rate_and_runs_shared_nodes_once(workers, users, digits):  # noqa: F811
    bandit = {"type": "BanditPolicy", "evaluation_interval": 1, "slack_factor": 0.2, "delay_evaluation": 2}
    sweep, good, poor, seen = learning_rate_sweep(users["owner"], digits, 2, EPOCHS, bandit)
    assert sweep.status == st.COMPLETED and sweep.best_trial == good, (sweep.message, seen)
    assert good.status == st.COMPLETED and good.epochs == EPOCHS and good.value > 0.5
    assert poor.status == st.EARLY_TERMINATED and poor.epochs < EPOCHS, (poor.status, poor.epochs, poor.error)
    train = NodeRun.objects.get(run=poor.run, node_id="train")
    assert train.status == st.COMPLETED  # stopped between epochs: its model is there, the best so far
    spec = yaml.safe_load((Path(train.outputs["trained_model"]) / "model.yaml").read_text())
    assert spec["epochs_run"] == poor.epochs and spec["best_epoch"] <= poor.epochs
    # the good trial's score is that of the model it hands on (the best epoch its training kept)
    kept = read_meta(NodeRun.objects.get(run=good.run, node_id="train").outputs["trained_model"])
    assert good.kept_step == kept["best_epoch"] and good.value == pytest.approx(kept["validation_top1_accuracy"])
    for node_id in SHARED:  # computed once for the whole sweep, reused (or waited for) by the other trial
        of_sweep = NodeRun.objects.filter(run__trial__sweep=sweep, node_id=node_id)
        assert of_sweep.filter(status=st.COMPLETED).count() == 1, node_id
        assert of_sweep.filter(status=st.REUSED).count() == 1, node_id
    for trial in (good, poor):
        no_process_left(trial.run)


SHORT = 5  # epochs: the poor trial is judged at epochs 2, 3 and 4 against the good one's latest
STOPPING = [{"type": "MedianStoppingPolicy", "evaluation_interval": 1, "delay_evaluation": 2},
            {"type": "TruncationSelectionPolicy", "evaluation_interval": 1, "truncation_percentage": 50, "delay_evaluation": 2}]


@pytest.mark.timeout(1800)
@pytest.mark.parametrize("policy", STOPPING, ids=[p["type"] for p in STOPPING])
def test_median_and_truncation_stop_the_poor_learning_rate_of_a_digits_sweep(workers, users, digits, policy):  # noqa: F811
    """The same sweep with one process per trial, under each of the other two policies: the poor
    learning rate ends early terminated, the good one trains every epoch and is the best."""
    sweep, good, poor, seen = learning_rate_sweep(users["owner"], digits, 1, SHORT, policy)
    assert sweep.status == st.COMPLETED and sweep.best_trial == good, (sweep.message, seen)
    assert good.status == st.COMPLETED and good.epochs == SHORT and good.value > 0.5, seen
    assert poor.status == st.EARLY_TERMINATED and poor.epochs < SHORT, seen
    assert NodeRun.objects.get(run=poor.run, node_id="train").status == st.COMPLETED  # its best epoch so far kept
