"""Issue 43, item 1: Azure ML's v2 command component files read unchanged (sdk/azure_component.py):
the samples of azureml-examples (tests/sdk/azure_v2) load as components with typed scalar
inputs as parameters, an optional one's $[[...]] group dropped when it has no value, uri_file
ports, distribution and resources as the node's Run settings; what is not supported is refused
naming the v2 field's path; a sample runs through the real executor."""
import json
import shutil

import pytest
import yaml

from designer.engine import graph
from modules._component import component_module
from modules.catalogue import Catalogue
from sdk import component
from sdk.component import ComponentError
from sdk.declarations import AnyDirectory, ModelDirectory
from sdk.errors import ModuleError
from sdk.formats.meta import artifact, write_meta
from sdk.param_schema import value_schema
from tests.conftest import ROOT
from tests.modules.test_component_module import run

SAMPLES = ROOT / "tests" / "sdk" / "azure_v2"


def sample(tmp_path, file: str, **changes):
    """A copy of a sample (with `changes` to its fields) and its code folder."""
    shutil.copytree(SAMPLES / "train_src", tmp_path / "train_src", dirs_exist_ok=True)
    data = yaml.safe_load((SAMPLES / file).read_text())
    for key, value in changes.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    (tmp_path / file).write_text(yaml.safe_dump(data, sort_keys=False))
    return tmp_path / file


def refusal(path) -> ComponentError:
    with pytest.raises(ComponentError) as e:
        component.load(path)
    return e.value


def test_the_samples_train_component_loads_unchanged_its_scalars_as_parameters():
    spec = component.load(SAMPLES / "train.yml")
    assert (spec.kind, spec.label, spec.version, spec.description) == (
        "train_data_component_cli", "train_data", 9, "A example train component")
    assert [(p.name, p.type) for p in spec.inputs] == [("training_data", AnyDirectory)]
    assert [(p.name, p.type) for p in spec.outputs] == [("model_output", AnyDirectory)]
    params = {p.name: p for p in spec.params}
    assert [(p.type, p.default) for p in params.values()] == [("int", None), ("float", 0.01), ("str", "time-based")]
    assert all(p.describe()["optional"] for p in params.values())  # each may be left empty
    assert params["max_epocs"].check(None) is None and params["max_epocs"].check(2.5) == "expected a whole number, got 2.5"
    assert value_schema(params["learning_rate"])["type"] == ["number", "null"]
    assert params["learning_rate_schedule"].normalise("") is None  # the pane's emptied box is no value
    assert spec.environment == "azureml://registries/azureml/environments/sklearn-1.0/labels/latest"
    # a sweep may name the script's flags, as HyperDrive's sweep files do
    assert spec.arguments() == {"--max_epocs": "max_epocs", "--learning_rate": "learning_rate",
                                "--learning_rate_schedule": "learning_rate_schedule"}
    # an optional input with no value drops its $[[...]] group, as Azure ML does
    argv = component.render(spec, {"training_data": "/data"}, {"max_epocs": None, "learning_rate": 0.01,
                                                                "learning_rate_schedule": None}, {"model_output": "/out"}, "py")
    assert argv == ["py", "train.py", "--training_data", "/data", "--learning_rate", "0.01", "--model_output", "/out"]


def test_a_required_scalar_without_default_waits_for_a_value_and_custom_model_is_a_model():
    spec = component.load(SAMPLES / "custom_model.yml")
    assert spec.version == 1 and spec.outputs[0].type == ModelDirectory
    max_epocs = next(p for p in spec.params if p.name == "max_epocs")
    assert max_epocs.default is None and max_epocs.check(None) == "expected a whole number, got None"
    assert "optional" not in max_epocs.describe()


def test_distribution_and_resources_are_a_new_nodes_run_settings(tmp_path):
    spec = component.load(SAMPLES / "distributed.yml")
    assert spec.version == 2 and spec.run_settings == {"process_count_per_node": 2, "node_count": 2}
    choice = next(p for p in spec.params if p.name == "optimizer")
    assert (choice.type, choice.choices, choice.default) == ("choice", ("sgd", "adam"), "sgd")
    module = component_module(spec, origin="tests")
    assert module.distributed and module.describe()["component"]["run_settings"] == {"process_count_per_node": 2,
                                                                                     "node_count": 2}
    catalogue = Catalogue([module])
    doc = {"nodes": [{"id": "a", "kind": "cifar_distributed"},
                     {"id": "b", "kind": "cifar_distributed", "run_settings": {"node_count": 1}}]}
    graph.pin_versions(doc, catalogue)  # at submit: the snapshot says what runs
    assert [n["run_settings"] for n in doc["nodes"]] == [{"process_count_per_node": 2, "node_count": 2},
                                                         {"process_count_per_node": 2, "node_count": 1}]


@pytest.mark.parametrize("changes, field, reason", [
    ({"type": "pipeline"}, "type", "'pipeline': not supported: only command components"),
    ({"$schema": "https://azuremlschemas.azureedge.net/latest/commandJob.schema.json"}, "$schema",
     "commandJob: not a command component"),
    ({"distribution": {"type": "mpi", "process_count_per_instance": 2}}, "distribution.type",
     "'mpi': not supported: the designer starts PyTorch's processes"),
    ({"resources": {"instance_count": 2, "instance_type": "STANDARD_NC6"}}, "resources.instance_type", "not supported"),
    ({"resources": {"instance_count": 0}}, "resources.instance_count", "expected a whole number from 1 to 1024, got 0"),
    ({"inputs": {"training_data": {"type": "mltable"}}}, "inputs.training_data.type", "mltable: not supported"),
    ({"inputs": {"training_data": {"type": "uri_folder"}, "max_epocs": {"type": "integer", "default": "ten"}}},
     "inputs.max_epocs.default", "expected a whole number, got 'ten'"),
    ({"inputs": {"training_data": {"type": "uri_folder"}, "max_epocs": {"type": "string", "min": 1}}},
     "inputs.max_epocs.min", "only an integer or number input has a min"),
    ({"inputs": {"training_data": {"type": "uri_folder"}, "max_epocs": {"type": "integer", "optional": True}}},
     "command", "${{inputs.learning_rate}} names no declared input"),
    ({"name": "Train-Data"}, "name", "'Train-Data' is not a kind"),
    ({"version": "1.x"}, "version", "'1.x': expected a whole number from 1, or MAJOR.MINOR.PATCH"),
    ({"code": "azureml:train-code:1"}, "code", "only a local folder"),
    ({"is_deterministic": False}, "is_deterministic", "not supported"),
    ({"compute": "azureml:gpu-cluster"}, "compute", "not a field of a command component the designer reads"),
    ({"outputs": {"model_output": {"type": "uri_folder", "mode": "stream"}}}, "outputs.model_output.mode",
     "'stream' is not a mode"),
    # azureml-examples' cli/jobs/single-step/pytorch/iris/job.yml runs `pip install -r requirements.txt && python main.py`
    ({"command": "pip install -r requirements.txt && python train.py --model_output ${{outputs.model_output}}"},
     "command", "'&&': the command runs as one program and its arguments, not through a shell"),
    ({"command": "echo ${{inputs.training_data}}\npython train.py --model_output ${{outputs.model_output}}\n"},
     "command", "2 lines: the command runs as one program"),
])
def test_what_is_not_supported_is_refused_naming_the_v2_fields_path(tmp_path, changes, field, reason):
    error = refusal(sample(tmp_path, "train.yml", **changes))
    assert any(f == field and reason in r for f, r in error.problems), error.problems
    assert str(error).startswith(str(tmp_path / "train.yml"))


def test_an_optional_input_outside_an_optional_group_is_refused(tmp_path):
    command = "python train.py --training_data ${{inputs.training_data}} --max_epocs ${{inputs.max_epocs}} " \
              "$[[--learning_rate ${{inputs.learning_rate}}]] $[[--s ${{inputs.learning_rate_schedule}}]] " \
              "--model_output ${{outputs.model_output}}"
    error = refusal(sample(tmp_path, "train.yml", command=command))
    assert error.problems == [("command", "${{params.max_epocs}} is an optional input: put it in an optional group, "
                                          "$[[--flag ${{params.max_epocs}}]], which is dropped when it has no value")]


def test_the_samples_run_through_the_executor_unchanged(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "rows.csv").write_text("a,b\n")
    write_meta(data, "AnyDirectory")
    module = component_module(component.load(SAMPLES / "train.yml"), origin="tests")
    outputs = run(module, tmp_path / "train", {"training_data": artifact(data)}, params={"max_epocs": 3})
    args = json.loads((tmp_path / "train" / "model_output" / "args.json").read_text())
    assert args == {"--training_data": str(data), "--max_epocs": "3", "--learning_rate": "0.01",
                    "--learning_rate_schedule": "time-based", "--model_output": outputs["model_output"]}
    log = (tmp_path / "train" / "logs" / "70_driver_log.txt").read_text()
    assert "environment 'azureml://registries/azureml/environments/sklearn-1.0/labels/latest' (the component file's): " \
           "not built here; the command runs in the worker's own environment" in log

    # uri_file: the command gets the input folder's one file, and a file path in its output's folder
    prep = component_module(component.load(SAMPLES / "prep.yml"), origin="tests")
    outputs = run(prep, tmp_path / "prep", {"input_data": artifact(data)})
    assert (tmp_path / "prep" / "output_data" / "output_data").read_text() == "A,B\n"
    (data / "more.csv").write_text("c\n")
    with pytest.raises(ModuleError, match="input 'Input Data' is declared uri_file \\(one file\\), but the folder it "
                                          "receives holds 2 files"):
        run(prep, tmp_path / "prep2", {"input_data": artifact(data)})
