"""A sweep of a pipeline whose training is a user's script (tests/components/tuning): its
`log_metric` figures are the trials' primary metric, and the policy's early termination reaches
the script (`sdk.stop_requested`), which keeps its best so far; the trial ends early terminated."""

import pytest

from designer.engine import statuses as st
from designer.pipelines.models import NodeRun
from designer.pipelines.sweeps import service as sweeps
from tests.pipes import node, out_path, pipeline
from tests.sweeps.test_sweeps import finished

pytestmark = pytest.mark.timeout(600)
BETTER, POOR = 0.01, 0.00001
EPOCHS = 20  # 6 s: room for the stop to reach the script on a busy machine


def test_a_scripts_metrics_drive_a_sweep_and_its_policy_stops_a_poor_trial(start_worker, users):
    start_worker("sweep-script", concurrency=2)
    doc = pipeline([node("fit", "test_tuning_script", epochs=EPOCHS, epoch_seconds=0.3)], [], name="script sweep")
    doc["parameters"] = [{"name": "lr", "type": "float", "default": 0.01, "min": 1e-9, "max": 1.0}]
    doc["nodes"][0]["bindings"] = {"learning_rate": "lr"}
    config = {"sampling": "grid", "parameter_space": [{"name": "lr", "expression": "choice", "values": [BETTER, POOR, POOR / 2]}],
              "policy": {"type": "BanditPolicy", "evaluation_interval": 1, "slack_factor": 0.2, "delay_evaluation": 1},
              "primary_metric_name": "score", "primary_metric_goal": "maximize", "max_total_runs": 3,
              "max_concurrent_runs": 2}
    sweep = finished(sweeps.start(users["owner"], doc, config))
    good = sweep.trials.get(values={"lr": BETTER})
    assert good.status == st.COMPLETED and good.epochs == EPOCHS and sweep.best_trial == good
    assert good.value == pytest.approx(1 - 0.5 / EPOCHS)
    stopped = list(sweep.trials.filter(status=st.EARLY_TERMINATED))
    assert stopped, list(sweep.trials.values("values", "status", "epochs"))
    for poor in stopped:
        assert poor.epochs < EPOCHS
        fit = NodeRun.objects.get(run=poor.run, node_id="fit")
        assert fit.status == st.COMPLETED  # the script stopped when asked and wrote its best so far
        assert float((out_path(fit.outputs["out"]) / "value.txt").read_text()) == pytest.approx(poor.value)
        log = (out_path(fit.outputs["out"]).parent / "logs" / "70_driver_log.txt").read_text()
        assert f"early terminated after epoch {poor.epochs} of {EPOCHS}" in log
