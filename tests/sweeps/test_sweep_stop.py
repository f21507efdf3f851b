"""A sweep's policy ends a trial whose script never asks stop_requested() (issue 29): the script
(tests/components/deaf, logging with azureml's run.log: no step, no planned steps) is asked
through the stop file, then ended `policy.stop_grace_seconds` later; its node completes with what
it wrote, marked partial and never reused; the trial is early terminated and says it was ended.
The good trial, never asked, runs every epoch. A 1 x 2 job of the same script (each process
started by torchrun) is ended the same way, every process of it."""
import os

import pytest
import yaml

from designer.engine import statuses as st
from designer.pipelines.models import Event, NodeRun
from designer.pipelines.sweeps import service as sweeps
from tests.pipes import node, out_path, pipeline
from tests.sweeps.test_sweeps import finished

pytestmark = pytest.mark.timeout(300)
BETTER, POOR = 0.01, 0.00001
# 18 s a trial: the poor one is ended long before its last epoch, also on a busy machine (at 9 s, under
# a load of 10 on 2 cores, the stop and its grace came after the script's end)
EPOCHS, EPOCH_SECONDS, GRACE = 60, 0.3, 2
PORTS = list(range(32400 + os.getpid() % 200 * 4, 32400 + os.getpid() % 200 * 4 + 4))  # rendezvous, apart from the others'


def deaf_sweep(users, processes: int = 1):
    """A grid of a good and a poor learning rate for the deaf script, the poor one ended GRACE s after its stop."""
    doc = pipeline([node("fit", "test_deaf_script", epochs=EPOCHS, epoch_seconds=EPOCH_SECONDS)], [], name="deaf sweep")
    doc["parameters"] = [{"name": "lr", "type": "float", "default": 0.01, "min": 1e-9, "max": 1.0}]
    doc["nodes"][0]["bindings"] = {"learning_rate": "lr"}
    doc["nodes"][0]["run_settings"] = {"node_count": 1, "process_count_per_node": processes}
    config = {"sampling": "grid", "parameter_space": [{"name": "lr", "expression": "choice", "values": [BETTER, POOR]}],
              "policy": {"type": "BanditPolicy", "evaluation_interval": 1, "slack_factor": 0.2, "delay_evaluation": 1,
                         "stop_grace_seconds": GRACE},
              "primary_metric_name": "score", "primary_metric_goal": "maximize", "max_total_runs": 2, "max_concurrent_runs": 2}
    return finished(sweeps.start(users["owner"], doc, config), timeout=180)


def test_a_policy_ends_a_script_that_never_asks_after_its_grace_and_the_trial_says_so(start_worker, users):
    start_worker("sweep-stop", concurrency=2)
    sweep = deaf_sweep(users)
    assert sweep.config["policy"]["stop_grace_seconds"] == GRACE

    good = sweep.trials.get(values={"lr": BETTER})
    assert (good.status, good.epochs, good.detail) == (st.COMPLETED, EPOCHS, "") and sweep.best_trial == good
    fit = NodeRun.objects.get(run=good.run, node_id="fit")
    assert f"finished all {EPOCHS} epochs" in (out_path(fit.outputs["out"]).parent / "logs" / "70_driver_log.txt").read_text()

    poor = sweep.trials.get(values={"lr": POOR})
    assert poor.status == st.EARLY_TERMINATED, (poor.status, poor.detail, poor.error)
    assert poor.stopped_at_step and poor.epochs < EPOCHS
    assert poor.detail == (f"early terminated at epoch {poor.epochs}: ended {GRACE} s after it was asked to stop at epoch "
                           f"{poor.stopped_at_step} (it never checks stop_requested())")
    fit = NodeRun.objects.get(run=poor.run, node_id="fit")
    assert fit.status == st.COMPLETED and fit.cache_key == ""  # stopped, not failed; partial: never reused
    out = out_path(fit.outputs["out"])
    kept = float((out / "value.txt").read_text())  # what it wrote before it was ended (an epoch behind its last figure at worst)
    assert 0 < kept <= poor.value and kept == pytest.approx(poor.value, rel=0.35)
    assert yaml.safe_load((out / "_meta.yaml").read_text())["partial"] is True
    log = (out.parent / "logs" / "70_driver_log.txt").read_text()
    assert f"the command still runs {GRACE} s after it was asked to stop: ending it" in log
    assert "finished all" not in log
    stopped = Event.objects.get(run=poor.run, type="stopped").data
    assert (stopped["how"], stopped["grace"], stopped["seen"]) == ("ended", GRACE, False)
    assert stopped["after"] >= GRACE


def test_a_distributed_trial_that_never_asks_is_ended_on_every_process(start_worker, users):
    start_worker("sweep-stop-ddp", concurrency=2, extra_env={
        "DISTRIBUTED_PORTS": f"{PORTS[0]}-{PORTS[-1]}", "DISTRIBUTED_START_SECONDS": "60", "WORKER_CPUS": "2",
        "OMP_WAIT_POLICY": "PASSIVE", "OMP_NUM_THREADS": "1"})
    sweep = deaf_sweep(users, processes=2)
    good = sweep.trials.get(values={"lr": BETTER})
    assert (good.status, good.epochs) == (st.COMPLETED, EPOCHS), (good.status, good.error)
    poor = sweep.trials.get(values={"lr": POOR})
    assert poor.status == st.EARLY_TERMINATED and poor.epochs < EPOCHS, (poor.status, poor.detail, poor.error)
    assert f"ended {GRACE} s after it was asked to stop" in poor.detail
    fit = NodeRun.objects.get(run=poor.run, node_id="fit")
    assert fit.status == st.COMPLETED and fit.cache_key == ""
    logs = out_path(fit.outputs["out"]).parent / "logs"
    assert "every process of every node was ended" in (logs / "70_mpi_log.txt").read_text()
    assert not any("finished all" in f.read_text() for f in logs.glob("70_driver_log_*.txt"))
