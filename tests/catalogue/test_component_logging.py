"""The examples written as the original's scripts (examples/components/azureml_run_logging and
mlflow_logging, issue 29): run unchanged on a real Celery worker, 1 x 1, their azureml `Run` and
MLflow calls are the node's metrics; a figure without a step is numbered as it comes, and a step
logged twice ranks by its last value (what a sweep reads)."""
import json

import pytest

from designer.engine import statuses as st
from designer.pipelines.models import Event
from designer.pipelines.runs import service as runs
from designer.pipelines.sweeps import service as sweeps
from tests.conftest import wait_for_run
from tests.pipes import node, out_path, pipeline

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(300)]
EPOCHS = 3


def run_example(kind: str, users):
    doc = pipeline([node("fit", kind, num_epochs=EPOCHS)], [], name=kind)
    run = wait_for_run(runs.submit(users["owner"], doc).id, timeout=120)
    fit = run.nodes.get(node_id="fit")
    log = (out_path(fit.outputs["model"]).parent / "logs" / "70_driver_log.txt").read_text()
    assert run.status == st.COMPLETED, (fit.error, log)
    figures: dict[str, list[tuple[int, float]]] = {}
    for data in Event.objects.filter(run=run, node_id="fit", type="metric").values_list("data", flat=True):
        figures.setdefault(data["name"], []).append((data["step"], data["value"]))
    model = json.loads((out_path(fit.outputs["model"]) / "model.json").read_text())
    return run, figures, model, log


def test_a_script_logging_with_azureml_run_records_the_nodes_metrics(shared_worker, users):
    run, figures, model, log = run_example("azureml_run_logging", users)
    assert [step for step, _ in figures["best_val_acc"]] == [1, 2, 3]  # run.log without a step
    assert [step for step, _ in figures["loss"]] == [1, 2, 3]
    assert [step for step, _ in figures["val_acc"]] == [1, 1, 2, 2, 3, 3]  # inside its loop, then after it
    assert [step for step, _ in figures["weights"]] == [1, 2]  # run.log_list
    last_of_each_step = figures["val_acc"][1::2]
    assert sweeps.primary_curve(run, "val_acc") == last_of_each_step
    assert sweeps.primary_curve(run, "best_val_acc")[-1][1] == model["best_val_acc"] == max(v for _, v in last_of_each_step)
    assert "(azureml) tag model=logistic regression" in log


def test_a_script_logging_with_mlflow_records_the_nodes_metrics(shared_worker, users):
    run, figures, model, log = run_example("mlflow_logging", users)
    assert {name: [step for step, _ in values] for name, values in figures.items()} == {
        "loss": [1, 2, 3], "val_acc": [1, 2, 3], "best_val_acc": [1, 2, 3]}
    assert figures["best_val_acc"][-1][1] == model["best_val_acc"] == max(v for _, v in figures["val_acc"])
    assert "(mlflow) autolog() does nothing in the designer" in log and "(mlflow) param num_epochs=3" in log
