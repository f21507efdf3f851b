"""A HyperDrive sweep file naming the script's own argument (`name: --learning_rate`, issue 29), as
examples/components/azureml_run_logging/hdconfig.yml does: through the API on a real Celery worker,
each trial's script is passed its sampled value, the best is named, Apply best values writes it
into the node; an argument no node passes is refused naming what exists."""
from pathlib import Path

import pytest

from designer.engine import statuses as st
from designer.pipelines.models import NodeRun, Sweep
from tests.pipes import node, out_path, pipeline
from tests.sweeps.test_sweeps import finished, saved

pytestmark = pytest.mark.timeout(300)
HDCONFIG = Path(__file__).parents[2] / "examples" / "components" / "azureml_run_logging" / "hdconfig.yml"


def example_pipeline():
    return pipeline([node("fit", "azureml_run_logging", num_epochs=2, learning_rate=0.1)], [], name="logistic")


@pytest.mark.django_db(transaction=True)
def test_the_examples_hyperdrive_file_sweeps_the_scripts_argument_and_applies_the_best(shared_worker, owner_client):
    text = HDCONFIG.read_text().replace("max_total_runs: 8", "max_total_runs: 3")
    pk = saved(owner_client, example_pipeline())
    r = owner_client.post("/api/sweeps", {"pipeline": pk, "config_yaml": text}, content_type="application/json")
    assert r.status_code == 201, r.content
    assert r.json()["swept"] == ["--learning_rate"]
    sweep = finished(Sweep.objects.get(pk=r.json()["id"]), timeout=180)
    trials = list(sweep.trials.select_related("run"))
    assert sweep.status == st.COMPLETED and len(trials) == 3, sweep.message
    for trial in trials:
        rate = trial.values["--learning_rate"]
        assert trial.status == st.COMPLETED and trial.value is not None, (trial.status, trial.error)
        assert trial.values == {"--learning_rate": rate} and 0.0024 < rate < 0.37  # exp(-6)..exp(-1)
        assert trial.run.parameter_values == {"learning_rate": rate}  # the pipeline parameter the sweep bound
        fit = NodeRun.objects.get(run=trial.run, node_id="fit")
        log = "".join(f.read_text() for f in (out_path(fit.outputs["model"]).parent / "logs").iterdir())
        assert f"--learning_rate {rate!r} --output_dir" in log  # the script's own argument
    best = max(trials, key=lambda t: t.value)
    assert sweep.best_trial.value == best.value
    assert f"best trial {sweep.best_trial.number}: best_val_acc {best.value:.4g} (--learning_rate=" in sweep.message
    shown = owner_client.get(f"/api/sweeps/{sweep.pk}").json()
    assert {t["number"]: t["values"] for t in shown["trials"]} == {t.number: t.values for t in trials}
    applied = owner_client.post(f"/api/sweeps/{sweep.pk}/apply-best").json()["pipeline"]["draft"]
    assert applied["nodes"][0]["parameters"]["learning_rate"] == sweep.best_trial.values["--learning_rate"]
    assert applied["parameters"] == [] and "bindings" not in applied["nodes"][0]  # the pipeline itself is as it was


@pytest.mark.django_db
def test_an_argument_no_component_passes_is_refused_naming_the_ones_that_exist(owner_client):
    text = HDCONFIG.read_text().replace("name: --learning_rate", "name: --lr")
    pk = saved(owner_client, example_pipeline())
    r = owner_client.post("/api/sweeps", {"pipeline": pk, "config_yaml": text}, content_type="application/json")
    assert r.status_code == 400, r.content
    (problem,) = r.json()["problems"]
    assert (problem["field"], problem["param"], problem["code"]) == ("parameter_space[0]", "--lr", "unknown_argument")
    line = text.splitlines().index("  - name: --lr") + 1
    assert problem["text"].startswith(f"parameter_space[0] (--lr) (line {line}): no component node of this pipeline "
                                      "passes '--lr' a parameter")
    assert "Logistic Regression (azureml Run logging): --num_epochs, --learning_rate" in problem["text"]
    assert not Sweep.objects.exists()


@pytest.mark.django_db
def test_manage_py_sweep_names_an_argument_no_component_passes_with_its_line(users, tmp_path):
    import json

    from django.core.management import call_command
    from django.core.management.base import CommandError

    (tmp_path / "p.json").write_text(json.dumps(example_pipeline()))
    (tmp_path / "hdconfig.yml").write_text(HDCONFIG.read_text().replace("--learning_rate", "--learning-rate"))
    with pytest.raises(CommandError) as e:
        call_command("sweep", str(tmp_path / "p.json"), config=str(tmp_path / "hdconfig.yml"), owner="owner")
    assert "parameter_space[0] (--learning-rate) (line 8): no component node of this pipeline passes '--learning-rate' " \
           "a parameter (did you mean --learning_rate?" in str(e.value)
