"""A sweep over a component's script arguments (designer/engine/sweep_arguments.py, issue 29):
`name: --learning_rate` bound to the nodes whose command passes it a parameter, checked as that
parameter, refused naming what exists, written back by Apply best values. Plain Python."""
import copy
from pathlib import Path

import pytest

from designer.engine import parameters, sweep_arguments
from designer.engine.sweep_config import SweepConfigInvalid, check
from designer.engine.sweep_text import entry_lines, parse_text
from modules import catalogue as module_catalogue
from modules._component import component_module
from sdk import component
from tests import toy_modules as toys
from tests.pipes import node, pipeline

EXAMPLE = Path(__file__).parents[2] / "examples" / "components" / "azureml_run_logging" / component.FILE_NAME
HDCONFIG = """sampling: random
parameter_space:
  - name: --learning_rate
    expression: loguniform
    values: [-6, -1]
primary_metric_name: best_val_acc
primary_metric_goal: maximize
max_total_runs: 4
"""


@pytest.fixture(scope="module")
def catalogue(tmp_path_factory):
    """The example (`--num_epochs {params.num_epochs} --learning_rate {params.learning_rate}`), a
    component written `--lr={params.lr}` with `-b` in an optional group, and a built-in module."""
    folder = tmp_path_factory.mktemp("other")
    (folder / "train.py").write_text("")
    (folder / component.FILE_NAME).write_text("""kind: other_train
label: Other train
command: >-
  python train.py --lr={params.lr} --epochs 3 --name {params.name} --out {outputs.model}
  $[[-b {params.batch} --val {inputs.val}]]
inputs: {val: {type: AnyDirectory, optional: true}}
outputs: {model: AnyDirectory}
metrics: [best_val_acc]
params:
  lr: {type: float, default: 0.5, min: 0, max: 1, max_exclusive: true}
  batch: {type: int, default: 8, min: 1.5, max: 64}
  name: {type: choice, choices: [a, b], default: a}
""")
    return module_catalogue.Catalogue([toys.ToySource, component_module(component.load(EXAMPLE)),
                               component_module(component.load(folder / component.FILE_NAME))])


def fit(nid="fit", **params):
    return node(nid, "azureml_run_logging", **params)


def config(*space, text=HDCONFIG):
    raw = parse_text(text)
    if space:
        raw["parameter_space"] = [{"name": n, "expression": x, "values": v} for n, x, v in space]
    return raw


def checked(doc, raw, catalogue):
    """What sweeps.check() does: bind, check the configuration against the bound pipeline."""
    bound = sweep_arguments.bind(doc, raw, catalogue)
    try:
        config = check(raw, bound.declarations(), parameters.metrics(doc, catalogue))
    except SweepConfigInvalid as e:
        return bound, None, [str(p) for p in bound.merged(e.problems)]
    return bound, config, [str(p) for p in bound.problems]


def test_the_commands_script_arguments_are_read_in_both_spellings_and_in_optional_groups(catalogue):
    assert component.arguments(catalogue.get("azureml_run_logging").component) == {
        "--num_epochs": "num_epochs", "--learning_rate": "learning_rate"}
    assert component.arguments(catalogue.get("other_train").component) == {"--lr": "lr", "--name": "name", "-b": "batch"}


def test_a_hyperdrive_file_naming_a_script_argument_sweeps_the_parameter_passed_to_it(catalogue):
    doc = pipeline([fit(learning_rate=0.05)], [])
    before = copy.deepcopy(doc)
    bound, config, found = checked(doc, config_ := parse_text(HDCONFIG), catalogue)
    assert found == [] and doc == before  # a copy is bound
    assert [e.name for e in config.parameter_space] == ["--learning_rate"]  # the name the user wrote stays
    assert bound.names == {"--learning_rate": "learning_rate"}
    (declared,) = bound.doc["parameters"]
    assert declared == {"name": "learning_rate", "type": "float", "default": 0.05, "min": 5e-324, "max": 10,
                        "help": "the script argument --learning_rate"}  # min 0 exclusive: the next float above 0
    assert bound.doc["nodes"][0]["bindings"] == {"learning_rate": "learning_rate"}
    assert parameters.problems(bound.doc, catalogue) == []
    assert bound.values({"--learning_rate": 0.01, "other": 1}) == {"learning_rate": 0.01, "other": 1}
    # each trial binds the stored pipeline again: the same parameter, nothing added
    again = sweep_arguments.bind(bound.doc, config_, catalogue)
    assert again.names == bound.names and again.doc == bound.doc and again.problems == []


def test_the_components_type_and_range_are_checked_under_the_arguments_name(catalogue):
    doc = pipeline([fit()], [])
    assert checked(doc, config(("--learning_rate", "loguniform", [-6, 3])), catalogue)[2] == [
        "parameter_space[0] (--learning_rate): exp(3) = 20.09 is above max 10 of --learning_rate (declared range 4.94066e-324..10)"]
    assert checked(doc, config(("--num_epochs", "uniform", [1, 9])), catalogue)[2] == [
        "parameter_space[0] (--num_epochs): --num_epochs is an int parameter: uniform draws fractional values "
        "(use choice, randint or quniform with a whole q)"]
    other = pipeline([node("o", "other_train")], [])
    _, config_, found = checked(other, config(("--lr", "uniform", [0.1, 0.9]), ("-b", "choice", [2, 64]),
                                              ("--name", "choice", ["a", "b"])), catalogue)
    assert found == [] and [e.name for e in config_.parameter_space] == ["--lr", "-b", "--name"]
    ranges = {d["name"]: (d["type"], d.get("min"), d.get("max")) for d in sweep_arguments.bind(other, config_.as_dict(), catalogue).declarations()}
    assert ranges["-b"] == ("int", 2, 64) and ranges["--name"] == ("string", None, None)  # min 1.5: 2 is the least whole number
    assert ranges["--lr"][0] == "float" and ranges["--lr"][2] < 1  # max 1 exclusive
    assert "above max" in checked(other, config(("--lr", "uniform", [0.1, 1])), catalogue)[2][0]


def test_a_taken_name_gets_a_suffix_and_a_node_already_bound_keeps_its_parameter(catalogue):
    doc = pipeline([fit("a"), fit("b")], [])
    doc["parameters"] = [{"name": "learning_rate", "type": "int", "default": 3},
                         {"name": "lr", "type": "float", "default": 0.1, "min": 0.001, "max": 0.5}]
    doc["nodes"][0]["bindings"] = {"num_epochs": "learning_rate"}
    bound, _, found = checked(doc, config(), catalogue)
    assert found == [] and bound.names == {"--learning_rate": "learning_rate_2"}
    assert [n["bindings"] for n in bound.doc["nodes"]] == [{"num_epochs": "learning_rate", "learning_rate": "learning_rate_2"},
                                                           {"learning_rate": "learning_rate_2"}]  # every node passing it
    doc["nodes"][1]["bindings"] = {"learning_rate": "lr"}  # one node binds it already: the argument drives that parameter
    bound, config_, found = checked(doc, config(("--learning_rate", "uniform", [0.01, 0.4])), catalogue)
    assert found == [] and bound.names == {"--learning_rate": "lr"}
    assert [n["bindings"]["learning_rate"] for n in bound.doc["nodes"]] == ["lr", "lr"]
    assert len(bound.doc["parameters"]) == 2
    assert "above max 0.5 of --learning_rate" in checked(doc, config(("--learning_rate", "uniform", [0.01, 0.9])), catalogue)[2][0]
    assert checked(doc, config(("--learning_rate", "uniform", [0.01, 0.4]), ("lr", "uniform", [0.01, 0.4])), catalogue)[2] == [
        "parameter_space[0] (--learning_rate): --learning_rate is pipeline parameter 'lr''s value, and parameter_space "
        "sweeps it too: sweep it once"]


def test_nodes_binding_the_argument_to_different_parameters_are_refused_naming_them(catalogue):
    doc = pipeline([fit("a"), fit("b")], [])
    doc["parameters"] = [{"name": n, "type": "float", "default": 0.1} for n in ("lr_a", "lr_b")]
    doc["nodes"][0]["bindings"], doc["nodes"][1]["bindings"] = {"learning_rate": "lr_a"}, {"learning_rate": "lr_b"}
    bound, _, found = checked(doc, config(), catalogue)
    assert found == ["parameter_space[0] (--learning_rate): the nodes passing it bind it to different pipeline parameters "
                     "(Logistic Regression (azureml Run logging) (a) (bound to 'lr_a'), Logistic Regression (azureml Run "
                     "logging) (b) (bound to 'lr_b')): one value cannot be both; bind them to one and sweep it"]
    assert bound.problems[0].code == "argument_conflict"


def test_an_argument_no_node_passes_is_named_with_the_arguments_that_exist_and_its_line(catalogue):
    text = HDCONFIG.replace("--learning_rate", "--learning-rate")
    doc = pipeline([fit(), node("o", "other_train"), node("s", "toy_source")], [])
    bound = sweep_arguments.bind(doc, parse_text(text), catalogue, entry_lines(text))
    (problem,) = bound.problems
    assert str(problem) == (
        "parameter_space[0] (--learning-rate) (line 3): no component node of this pipeline passes '--learning-rate' a "
        "parameter (did you mean --learning_rate? the arguments its components take: Logistic Regression (azureml Run "
        "logging): --num_epochs, --learning_rate; Other train: --lr, --name, -b)")
    assert (problem.field, problem.param, problem.code) == ("parameter_space[0]", "--learning-rate", "unknown_argument")
    # it replaces sweep_config's "unknown pipeline parameter", and the other problems stay
    _, _, found = checked(doc, parse_text(text.replace("best_val_acc", "accuracy")), catalogue)
    assert len(found) == 2 and "unknown metric 'accuracy'" in found[1]
    assert found[0].startswith("parameter_space[0] (--learning-rate): no component node")
    none = sweep_arguments.bind(pipeline([node("s", "toy_source")], []), parse_text(HDCONFIG), catalogue).problems
    assert "none of its nodes is a component whose command passes a script argument a parameter" in str(none[0])


def test_a_long_argument_is_quoted_bounded():
    name = "--" + "x" * 1_000_000
    bound = sweep_arguments.bind(pipeline([], []), config((name, "uniform", [0, 1])), module_catalogue.Catalogue([]))
    assert len(str(bound.problems[0])) < 400


def test_apply_writes_an_arguments_value_into_the_nodes_or_the_parameter_they_bind(catalogue):
    doc = pipeline([fit("a", learning_rate=0.1), fit("b", learning_rate=0.1), node("o", "other_train")], [])
    doc["parameters"] = [{"name": "lr", "type": "float", "default": 0.1}]
    doc["nodes"][1]["bindings"] = {"learning_rate": "lr"}
    rest = sweep_arguments.apply(doc, {"--learning_rate": 0.02, "-b": 16.0, "--nope": 1, "seed": 3}, catalogue)
    assert rest == {"seed": 3, "lr": 0.02}  # b binds it: its pipeline parameter takes the value
    assert doc["nodes"][0]["parameters"]["learning_rate"] == 0.02 and doc["nodes"][1]["parameters"]["learning_rate"] == 0.1
    assert doc["nodes"][2]["parameters"] == {"batch": 16} and type(doc["nodes"][2]["parameters"]["batch"]) is int


def test_an_argument_passed_parameters_no_one_value_fits_is_refused_saying_why(tmp_path):
    """Two components pass `--learning_rate` a choice and a float, and `--num_epochs` ints of
    ranges that do not overlap: no pipeline parameter can stand for either."""
    (tmp_path / "train.py").write_text("")
    (tmp_path / component.FILE_NAME).write_text("""kind: picky_train
label: Picky train
command: python train.py --learning_rate {params.lr} --num_epochs {params.epochs} --out {outputs.model}
outputs: {model: AnyDirectory}
metrics: [best_val_acc]
params:
  lr: {type: choice, choices: [slow, fast], default: slow}
  epochs: {type: int, default: 2000, min: 2000, max: 3000}
""")
    catalogue = module_catalogue.Catalogue([component_module(component.load(EXAMPLE)), component_module(component.load(tmp_path / component.FILE_NAME))])
    doc = pipeline([fit(), node("p", "picky_train")], [])
    found = [str(p) for p in sweep_arguments.bind(doc, config(("--learning_rate", "uniform", [0.01, 0.4]),
                                                              ("--num_epochs", "choice", [2, 3])), catalogue).problems]
    assert len(found) == 2, found
    assert "--learning_rate" in found[0] and "it is passed parameters of types choice, float: one value cannot be all of them" in found[0]
    assert "--num_epochs" in found[1] and "the ranges of the parameters it is passed do not overlap" in found[1]


def test_the_lines_of_a_configuration_that_is_not_yaml_or_has_no_parameter_space_are_none():
    assert entry_lines("parameter_space: [unclosed") == {}
    assert entry_lines("sampling: grid\n") == {} and entry_lines("- a list\n") == {}
    assert entry_lines(HDCONFIG) == {0: 3}
