"""The original's logging, unchanged, in a component's script (issue 29, item 1): `azureml.core.Run`
and MLflow's functions (sdk/compat) record the node's metrics through the metrics file, in a real
process started as supervision.command starts a component's; a figure without a step is numbered as
it comes. Outside the designer the azureml run is offline and prints, as the original's does; a
real mlflow, where installed, is not shadowed."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from sdk import compat
from sdk.formats import metrics
from supervision import command
from tests.conftest import ROOT


def run_script(tmp_path: Path, body: str) -> tuple[list[tuple], str]:
    """Run the script as a component's command; (name, value, step) of each metric relayed, and its log."""
    code = tmp_path / "code"
    code.mkdir(exist_ok=True)
    (code / "script.py").write_text(textwrap.dedent(body))
    log, got = tmp_path / "70_driver_log.txt", []
    command.run(["python", "script.py"], code, log, metrics_file=tmp_path / metrics.METRICS_FILE,
                on_metric=lambda name, value, step, steps: got.append((name, value, step)))
    return got, log.read_text()


def test_azureml_run_logging_records_the_nodes_metrics_numbered_as_they_come(tmp_path):
    got, log = run_script(tmp_path, """
        from azureml.core.run import Run
        from azureml.core import Run as SameRun
        import math

        assert Run is SameRun
        run = Run.get_context()
        for acc in (0.5, 0.7):
            run.log("best_val_acc", acc)
        run.log("loss", 0.4, step=5)
        run.log_list("accuracies", [0.1, 0.2])
        run.log_row("curve", x=1, y=0.25, label="a")
        run.log("note", "not a number")
        run.log("broken", math.nan)
        run.tag("framework", "pytorch")
        run.parent.log("best_val_acc", 0.9)      # a sweep's trial logs to its parent: the node's too
        run.log_image("plot", path="p.png")
        run.complete()
        print("tags", run.get_tags())
    """)
    assert got == [("best_val_acc", 0.5, 1), ("best_val_acc", 0.7, 2), ("loss", 0.4, 5), ("accuracies", 0.1, 1),
                   ("accuracies", 0.2, 2), ("curve/x", 1.0, 1), ("curve/y", 0.25, 1), ("best_val_acc", 0.9, 3)]
    assert "(azureml) 'note': 'not a number' is not a finite number: not recorded as a metric" in log
    assert "(azureml) 'broken': nan is not a finite number" in log
    assert "(azureml) tag framework=pytorch" in log and "tags {'framework': 'pytorch'}" in log
    assert "run.log_image('plot'): images are not recorded" in log


def test_mlflow_logging_records_the_nodes_metrics_and_autolog_says_it_does_nothing(tmp_path):
    got, log = run_script(tmp_path, """
        import mlflow
        import mlflow.pytorch

        mlflow.autolog()
        mlflow.pytorch.autolog()
        with mlflow.start_run() as run:
            mlflow.log_param("learning_rate", 0.01)
            mlflow.log_params({"epochs": 2})
            mlflow.set_tag("framework", "pytorch")
            mlflow.set_tags({"sample": "yes"})
            mlflow.log_metric("val_acc", 0.5)
            mlflow.log_metric("val_acc", 0.6)
            mlflow.log_metric("loss", 0.9, step=1)
            mlflow.log_metrics({"loss": 0.8, "val_acc": 0.7}, step=2)
            assert mlflow.active_run() is run and run.data.params["epochs"] == "2"
        assert mlflow.active_run() is None and run.info.status == "FINISHED"
        mlflow.log_metric("after", 1)           # no run: one starts, as mlflow's does
    """)
    assert got == [("val_acc", 0.5, 1), ("val_acc", 0.6, 2), ("loss", 0.9, 1), ("loss", 0.8, 2), ("val_acc", 0.7, 2),
                   ("after", 1.0, 1)]
    assert log.count("(mlflow) autolog() does nothing in the designer") == 1
    assert "(mlflow) param learning_rate=0.01" in log and "(mlflow) tag framework=pytorch" in log


def test_outside_the_designer_the_azureml_run_is_offline_and_prints_as_the_originals(tmp_path):
    script = tmp_path / "script.py"
    script.write_text("from azureml.core import Run\nrun = Run.get_context()\nprint(run.id)\n"
                      "run.log('accuracy', 0.91)\nrun.log_list('l', [1, 2])\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("DESIGNER_")}
    env["PYTHONPATH"] = os.pathsep.join([str(compat.AZUREML), str(ROOT)])
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=60, check=True)
    lines = out.stdout.splitlines()
    assert lines[0].startswith("OfflineRun_")
    assert lines[1:] == ["Attempted to log scalar metric accuracy:", "0.91", "Attempted to log list metric l:", "[1, 2]"]


def test_the_mlflow_shim_stays_off_the_path_where_a_real_mlflow_is_installed(tmp_path, monkeypatch):
    assert compat.search_path() == [str(compat.AZUREML), str(compat.MLFLOW)]  # this venv has no mlflow
    real = tmp_path / "site" / "mlflow"
    real.mkdir(parents=True)
    (real / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    assert compat.search_path() == [str(compat.AZUREML)]
    assert str(compat.MLFLOW) not in command.job_env(None, None)["PYTHONPATH"].split(os.pathsep)
