"""Issue 43, item 1: Azure ML v2 job files run from `manage.py create_job --file`, as `az ml job create
--file` would (sdk/azure_job.py): azureml-examples' hello-sweep.yml, unchanged with its script, sweeps
on a real worker with the script's MLflow metric as its objective; a command job runs once; a job
with a data input, or a bad field, is refused naming the field's path."""
from pathlib import Path

import pytest
import yaml
from django.core.management import call_command
from django.core.management.base import CommandError

from designer.engine import statuses as st
from designer.pipelines.models import Component, Run, Sweep
from sdk import azure_job
from tests.conftest import may_add_components

pytestmark = pytest.mark.timeout(300)
JOBS = Path(__file__).parents[1] / "sdk" / "azure_v2" / "jobs"


def job_of(name: str, **changes) -> azure_job.Job:
    data = yaml.safe_load((JOBS / name).read_text())
    data.update(changes)
    return azure_job.translate(data, JOBS / name, "job_x")


def test_a_sweep_jobs_fields_become_a_component_a_pipeline_and_a_hyperdrive_configuration():
    job = job_of("hello-sweep.yml")
    assert job.component["command"].split() == ["python", "hello-sweep.py", "--A", "${{inputs.A}}", "--B", "${{inputs.B}}",
                                                "--C", "${{inputs.C}}"]
    assert job.component["inputs"] == {"A": {"type": "number", "default": 0.5}, "B": {"type": "string"},
                                       "C": {"type": "number"}}
    assert job.code == JOBS / "src" and (job.name, job.experiment) == ("hello-sweep-example", "hello-sweep-example")
    assert job.pipeline["parameters"] == [{"name": "B", "type": "string", "default": "hello"},
                                          {"name": "C", "type": "float", "default": 0.55}]
    assert job.pipeline["nodes"][0]["bindings"] == {"B": "B", "C": "C"}
    assert job.sweep == {"sampling": "random", "policy": {"type": "NoTerminationPolicy"},
                         "parameter_space": [{"name": "B", "expression": "choice", "values": ["hello", "world", "hello_world"]},
                                             {"name": "C", "expression": "uniform", "values": [0.1, 1.0]}],
                         "primary_metric_name": "random_metric", "primary_metric_goal": "minimize",
                         "max_total_runs": 4, "max_concurrent_runs": 2, "max_duration_minutes": 60}
    bandit = job_of("hello-sweep.yml", early_termination={"type": "bandit", "slack_factor": 0.1, "evaluation_interval": 1})
    assert bandit.sweep["policy"] == {"type": "BanditPolicy", "evaluation_interval": 1, "slack_factor": 0.1}


@pytest.mark.parametrize("name, changes, field, reason", [
    ("cifar-distributed.yml", {}, "inputs.cifar", "a data input is not read from a job file yet"),
    ("hello-command.yml", {"inputs": {"iris": {"type": "uri_file", "path": "https://example.org/iris.csv"}}},
     "inputs.iris", "a data input is not read from a job file yet"),
    ("hello-sweep.yml", {"search_space": {"B": {"type": "choice", "values": ["a"]}, "C": {"type": "beta"}}},
     "search_space.C.type", "'beta' is not an expression"),
    ("hello-sweep.yml", {"early_termination": {"type": "bandit", "slack": 0.1}}, "early_termination.slack",
     "not a field of bandit"),
    ("hello-sweep.yml", {"limits": {"max_total_trials": 2, "max_nodes": 2}}, "limits.max_nodes", "not supported"),
    ("hello-command.yml", {"code": "azureml:code:1"}, "code", "only a local folder"),
    ("hello-command.yml", {"$schema": "https://azuremlschemas.azureedge.net/latest/pipelineJob.schema.json"}, "$schema",
     "pipelineJob: not a command or sweep job"),
])
def test_what_a_job_file_may_not_say_is_refused_naming_its_field(name, changes, field, reason):
    with pytest.raises(azure_job.JobError) as e:
        job_of(name, **changes)
    assert any(f == field and reason in r for f, r in e.value.problems), e.value.problems


@pytest.mark.django_db(transaction=True)
def test_manage_py_create_job_sweeps_the_samples_hello_sweep_unchanged(shared_worker, users, capsys):
    with pytest.raises(CommandError, match="needs the permission 'Can add component'"):
        call_command("create_job", file=str(JOBS / "hello-sweep.yml"), owner="owner")
    may_add_components(users["owner"])
    call_command("create_job", file=str(JOBS / "hello-sweep.yml"), owner="owner", timeout=200)
    sweep = Sweep.objects.get()
    trials = list(sweep.trials.select_related("run"))
    assert sweep.status == st.COMPLETED and len(trials) == 4, sweep.message
    assert (sweep.name, sweep.experiment) == ("hello-sweep-example", "hello-sweep-example")
    for trial in trials:  # the script's mlflow.log_metric("random_metric", random()) is each trial's objective
        assert trial.status == st.COMPLETED and 0 <= trial.value <= 1, (trial.status, trial.error)
        assert trial.values["B"] in ("hello", "world", "hello_world") and 0.1 <= trial.values["C"] <= 1.0
    assert sweep.best_trial.value == min(t.value for t in trials)  # objective: minimize
    out = capsys.readouterr().out
    assert "random sampling of B, C, up to 4 trial(s), 2 at a time, minimize random_metric" in out

    # a command job: one run of a component of the owner's; run again unchanged, the same version
    for _ in range(2):
        call_command("create_job", file=str(JOBS / "hello-command.yml"), owner="owner", timeout=120)
    runs = list(Run.objects.filter(name="hello-command").order_by("id"))
    assert [r.status for r in runs] == [st.COMPLETED, st.COMPLETED] and runs[0].experiment == "hello-examples"
    assert runs[0].tags == {"team": "cv"}
    assert Component.objects.filter(kind="job_hello_command").count() == 1  # unchanged: not a new version
    log = capsys.readouterr().out
    assert "A: 0.5" not in log  # the script's prints are in the node's log, not the command's output
    assert runs[0].snapshot["nodes"][0]["parameters"] == {"A": 0.5, "B": "hello world", "C": 3}
