"""Pipeline parameters (designer/engine/parameters.py): declarations, bindings, a run's values,
and the schema_version 1 -> 2 migration that introduced them. Plain Python: no database."""
import copy
import json
from pathlib import Path

import pytest

from designer.engine import graph, parameters
from designer.engine.schema_migrations import CURRENT, migrate
from modules import catalogue as module_catalogue
from tests import toy_modules as toys
from tests.pipes import link, node, pipeline

CAT = module_catalogue.Catalogue([toys.ToySource, toys.ToyAdd, toys.ToySink, toys.ToyTraining])
REAL = module_catalogue.load()
EXAMPLES = sorted((Path(__file__).parents[2] / "examples").glob("*.json"))


def declare(**kw):
    return {"name": "p", "type": "int", "default": 1} | kw


def doc_with(decls, bindings=None, value=3):
    """source (value=3) -> add -> add2; `bindings` are the source node's."""
    src = node("a", "toy_source", value=value) | ({"bindings": bindings} if bindings else {})
    doc = pipeline([src, node("b", "toy_add"), node("c", "toy_add")], [link("a", "b"), link("b", "c")])
    return doc | {"parameters": decls}


def only(problems):
    assert len(problems) == 1, [str(p) for p in problems]
    return problems[0]


# --------------------------------------------------------------------------- declarations


def test_a_pipeline_with_parameters_and_bindings_has_no_problems():
    doc = doc_with([declare(name="seed", min=0, max=1000, help="the source value")], {"value": "seed"})
    assert graph.validate(doc, CAT) == []


@pytest.mark.parametrize("decl,words", [
    (declare(name="2lr"), "'2lr' cannot be a name"),
    (declare(name="a-b"), "'a-b' cannot be a name"),
    (declare(name="x" * 65), "64 characters at most"),
    (declare(type="double"), "type 'double' is not one of: int, float, bool, string"),
    (declare(default="3"), "its default (int): expected a whole number, got '3'"),
    (declare(default=2.5), "its default (int): expected a whole number, got 2.5"),
    (declare(type="float", default=True), "its default (float): expected a number, got True"),
    (declare(type="bool", default=0), "its default (bool): expected true or false, got 0"),
    (declare(type="string", default=1), "its default (string): expected text, got 1"),
    (declare(min=5, max=1), "its min 5 is greater than its max 1"),
    (declare(default=0, min=1, max=5), "its default 0 is out of range: must be >= 1 and <= 5"),
    (declare(type="float", default=2.0, max=1.0), "its default 2.0 is out of range: must be <= 1.0"),
    (declare(type="bool", default=True, min=0), "a bool parameter has no min"),
    (declare(type="string", default="x", max=3), "a string parameter has no max"),
])
def test_each_bad_declaration_is_named(decl, words):
    problem = only(graph.validate(doc_with([decl]), CAT))
    assert problem.code == "bad_parameter" and problem.pipeline_parameter == decl["name"]
    assert f"pipeline parameter {decl['name']!r}: " in problem.message and words in problem.message


def test_a_duplicate_name_is_named():
    problem = only(parameters.problems(doc_with([declare(name="lr"), declare(name="lr")]), CAT))
    assert problem.code == "bad_parameter" and "two pipeline parameters are named 'lr'" in problem.message


def test_a_declaration_of_the_wrong_shape_is_a_schema_problem():
    problems = graph.validate(doc_with([{"name": "p", "type": "int", "default": 1, "colour": "red"}, {"name": "q"}]), CAT)
    assert {p.code for p in problems} == {"schema"}
    assert any("colour" in p.message for p in problems) and any("'default' is a required property" in p.message for p in problems)


def test_a_default_that_is_not_a_number_at_all_is_named():
    problems = graph.validate(doc_with([declare(type="float", default=float("nan"))]), CAT)
    problem = only(problems)
    assert problem.pipeline_parameter == "p" and "NaN" in problem.message and "pipeline parameter 'p'" in problem.message


# --------------------------------------------------------------------------- bindings


def test_binding_a_parameter_the_module_does_not_have():
    problem = only(graph.validate(doc_with([declare()], {"colour": "p"}), CAT))
    assert (problem.code, problem.node, problem.param) == ("unknown_param", "a", "colour")
    assert "Toy source has no parameter 'colour'" in problem.message and "value, sleep" in problem.message


def test_binding_to_an_undeclared_pipeline_parameter_lists_the_declared_ones():
    problem = only(graph.validate(doc_with([declare(name="seed"), declare(name="n")], {"value": "lr"}), CAT))
    assert (problem.code, problem.node, problem.param, problem.pipeline_parameter) == ("unknown_parameter", "a", "value", "lr")
    assert "Toy source: Value is bound to pipeline parameter 'lr', which this pipeline does not declare" in problem.message
    assert "(its parameters: seed, n)" in problem.message
    problem = only(graph.validate(doc_with([], {"value": "lr"}), CAT))
    assert "(its parameters: none)" in problem.message


@pytest.mark.parametrize("decl,module_param,ok", [
    (declare(), "value", True),  # int binds Int
    (declare(default=0), "sleep", True),  # int binds Float
    (declare(type="float", default=1.0), "value", False),  # float cannot bind Int
    (declare(type="float", default=1.0), "sleep", True),
    (declare(type="bool", default=False), "value", False),
    (declare(type="string", default="1"), "value", False),
    (declare(), "fail", False),  # on toy_add
    (declare(type="bool", default=False), "fail", True),
])
def test_a_type_mismatch_is_named(decl, module_param, ok):
    where = "b" if module_param == "fail" else "a"
    doc = doc_with([decl])
    next(n for n in doc["nodes"] if n["id"] == where)["bindings"] = {module_param: "p"}
    problems = graph.validate(doc, CAT)
    if ok:
        assert problems == []
        return
    problem = only(problems)
    assert (problem.code, problem.node, problem.param) == ("type_mismatch", where, module_param)
    assert f"cannot be bound to pipeline parameter 'p' of type {decl['type']}" in problem.message


def test_a_string_parameter_binds_a_choice_and_is_checked_against_its_choices():
    doc = pipeline([node("t", "apply_image_transformation") | {"bindings": {"mode": "mode"}}], [])
    doc["parameters"] = [{"name": "mode", "type": "string", "default": "For inference"}]
    assert parameters.problems(doc, REAL) == []
    doc["parameters"][0]["default"] = "sideways"
    problem = only(parameters.problems(doc, REAL))
    assert problem.code == "out_of_range" and "its default 'sideways' is not one of: For training, For inference" in problem.message


def test_a_default_outside_a_bound_module_parameter_range_names_the_module_and_parameter():
    doc = pipeline([node("train", "train_pytorch_model") | {"bindings": {"learning_rate": "lr"}}], [])
    doc["parameters"] = [{"name": "lr", "type": "float", "default": 0}]
    problem = only(parameters.problems(doc, REAL))
    assert (problem.code, problem.node, problem.param) == ("out_of_range", "train", "learning_rate")
    assert problem.message == ("Train PyTorch Model: Learning rate is bound to pipeline parameter 'lr': "
                               "its default 0 is out of range: must be > 0")


def test_a_declared_min_or_max_outside_a_bound_range_is_named():
    doc = doc_with([declare(default=5, min=-1, max=2000)], {"value": "p"})
    problems = graph.validate(doc, CAT)
    assert [p.code for p in problems] == ["out_of_range", "out_of_range"]
    assert "Toy source: Value is bound to pipeline parameter 'p': its min -1 is out of range: must be >= 0 and <= 1000" in problems[0].message
    assert "its max 2000 is out of range" in problems[1].message
    assert all((p.node, p.param) == ("a", "value") for p in problems)


def test_every_problem_comes_at_once_with_the_other_problems_of_the_pipeline():
    doc = doc_with([declare(name="bad name"), declare(name="x", type="float", default=1.5)],
                   {"value": "x", "nope": "missing"}, value=5000)
    codes = sorted(p.code for p in graph.validate(doc, CAT))
    assert codes == ["bad_parameter", "bad_value", "type_mismatch", "unknown_param", "unknown_parameter"]


def test_problems_serialise_with_the_pipeline_parameter():
    problem = only(graph.validate(doc_with([declare()], {"value": "lr"}), CAT))
    d = problem.as_dict()
    assert d["pipeline_parameter"] == "lr" and d["node"] == "a" and d["param"] == "value"
    assert d["text"].startswith("Toy source, parameter 'value': Value is bound")


# --------------------------------------------------------------------------- resolve


def test_resolve_fills_defaults_freezes_values_and_replaces_bound_parameters():
    doc = doc_with([declare(name="v", default=7, min=0, max=100), declare(name="s", type="float", default=0.0)],
                   {"value": "v", "sleep": "s"})
    before = copy.deepcopy(doc)
    run = parameters.resolve(doc, {"s": 1}, CAT)
    assert doc == before, "the document itself is left as it was"
    assert run["parameter_values"] == {"v": 7, "s": 1.0}
    assert isinstance(run["parameter_values"]["s"], float)
    source = run["nodes"][0]
    assert source["parameters"] == {"value": 7, "sleep": 1.0} and source["bindings"] == {"value": "v", "sleep": "s"}
    assert graph.validate(run, CAT) == [], "a run's snapshot is a valid document"


def test_resolve_turns_a_whole_float_into_an_int():
    run = parameters.resolve(doc_with([declare(name="v")], {"value": "v"}), {"v": 3.0}, CAT)
    assert run["parameter_values"] == {"v": 3} and isinstance(run["parameter_values"]["v"], int)
    assert isinstance(run["nodes"][0]["parameters"]["value"], int)


def test_resolve_without_parameters_freezes_nothing():
    run = parameters.resolve(doc_with([]), None, CAT)
    assert run["parameter_values"] == {} and run["nodes"][0]["parameters"] == {"value": 3}


def test_resolve_names_every_bad_value_at_once():
    doc = doc_with([declare(name="v", default=5), declare(name="r", default=5, min=0, max=10),
                    declare(name="f", type="bool", default=False)], {"value": "v"})
    with pytest.raises(graph.PipelineInvalid) as e:
        parameters.resolve(doc, {"v": 5000, "r": 11, "f": "yes", "ghost": 1}, CAT)
    by_param = {p.pipeline_parameter: p for p in e.value.problems}
    assert sorted(by_param) == ["f", "ghost", "r", "v"]
    assert by_param["ghost"].code == "unknown_parameter" and "(this pipeline's parameters: v, r, f)" in by_param["ghost"].message
    assert by_param["r"].code == "out_of_range" and "11 is out of range: must be >= 0 and <= 10" in by_param["r"].message
    assert by_param["f"].code == "bad_value" and "expected true or false, got 'yes'" in by_param["f"].message
    v = by_param["v"]
    assert (v.code, v.node, v.param) == ("out_of_range", "a", "value")
    assert "Toy source: Value is bound to pipeline parameter 'v': its value 5000 is out of range" in v.message


def test_resolve_refuses_a_pipeline_whose_declarations_are_wrong():
    with pytest.raises(graph.PipelineInvalid) as e:
        parameters.resolve(doc_with([declare()], {"value": "lr"}), {}, CAT)
    assert [p.code for p in e.value.problems] == ["unknown_parameter"]
    with pytest.raises(graph.PipelineInvalid, match="must be an object"):
        parameters.resolve(doc_with([]), [1], CAT)


# --------------------------------------------------------------------------- coerce (the command line)


@pytest.mark.parametrize("type_,text,value", [
    ("int", "3", 3), ("int", " -4 ", -4), ("int", "3.0", 3), ("int", "1e3", 1000),
    ("int", str(2**60 + 1), 2**60 + 1), ("float", "0.01", 0.01), ("float", "2", 2.0),
    ("bool", "true", True), ("bool", "No", False), ("bool", "1", True), ("string", " a b ", " a b "),
])
def test_coerce_reads_a_value_of_the_declared_type(type_, text, value):
    got = parameters.coerce({"name": "p", "type": type_, "default": None}, text)
    assert got == value and type(got) is type(value)


@pytest.mark.parametrize("type_,text,words", [
    ("int", "3.5", "pipeline parameter 'p' is an int: '3.5' is not a whole number"),
    ("int", "ten", "is not a whole number"),
    ("float", "nan", "pipeline parameter 'p' is a float: 'nan' is not a finite number"),
    ("float", "inf", "is not a finite number"),
    ("float", "", "is not a finite number"),
    ("bool", "maybe", "pipeline parameter 'p' is a bool: 'maybe' is not true or false"),
    ("colour", "red", "has type 'colour'"),
])
def test_coerce_names_the_parameter_and_type_of_a_bad_text(type_, text, words):
    with pytest.raises(ValueError, match=words):
        parameters.coerce({"name": "p", "type": type_, "default": None}, text)


# --------------------------------------------------------------------------- sweeps


def test_metrics_are_those_the_modules_declare():
    doc = pipeline([node("t", "train_pytorch_model"), node("e", "evaluate_model"), node("x", "no_such_module")], [])
    found = parameters.metrics(doc, REAL)
    assert {"training_loss", "validation_top1_accuracy", "learning_rate"} <= found
    assert set(REAL.get("evaluate_model").metrics) <= found
    assert parameters.metrics(pipeline([node("a", "toy_source")], []), CAT) == set()


def test_dependent_nodes_are_the_bound_ones_and_everything_downstream():
    doc = pipeline([node("a", "toy_source"), node("b", "toy_add") | {"bindings": {"amount": "n"}}, node("c", "toy_add"),
                    node("d", "toy_add"), node("e", "toy_source") | {"bindings": {"value": "m"}}],
                   [link("a", "b"), link("b", "c"), link("a", "d"), link("e", "c", dst_port="extra")])
    assert parameters.dependent_nodes(doc, ["n"]) == {"b", "c"}
    assert parameters.dependent_nodes(doc, {"m"}) == {"e", "c"}
    assert parameters.dependent_nodes(doc, ["n", "m"]) == {"b", "c", "e"}
    assert parameters.dependent_nodes(doc, []) == set()


# --------------------------------------------------------------------------- schema_version 2


def test_a_version_1_document_migrates_to_version_2_with_no_parameters():
    v1 = {"schema_version": 1, "name": "old", "nodes": [node("a", "toy_source")], "links": [], "layout": {}}
    before = copy.deepcopy(v1)
    v2 = migrate(v1)  # on to CURRENT (3: compute targets, tests/engine/test_targets.py)
    assert CURRENT == 3 and v2["schema_version"] == 3 and v2["parameters"] == []
    assert {k: v for k, v in v2.items() if k not in ("schema_version", "parameters")} == \
        {k: v for k, v in before.items() if k != "schema_version"}
    assert v1 == before, "the migration leaves its input as it was"
    assert graph.validate(v2, CAT) == []
    assert graph.schema_problems(v1) != [], "a version 1 document is read through the migration only"


def test_a_version_1_file_reads_through_the_migration_and_writes_as_version_2():
    text = json.dumps({"schema_version": 1, "nodes": [node("a", "toy_source", value=2)], "links": []})
    doc = graph.parse_text(text)
    assert doc["schema_version"] == CURRENT and doc["parameters"] == []
    assert json.loads(graph.dumps(doc))["schema_version"] == CURRENT


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_example_file_still_validates(path):
    doc = graph.parse_text(path.read_bytes())
    assert doc["schema_version"] == CURRENT
    for n in doc["nodes"]:
        if n["kind"] == "dataset" and not isinstance(n["parameters"].get("dataset"), int):
            # the user picks one of theirs, or the file names one ("digits": the user's dataset of
            # that name, found on import and submit): a placeholder in the file
            n["parameters"]["dataset"] = 1
    assert graph.validate(doc, REAL) == []


def test_the_schema_says_the_current_version():
    schema = json.loads(graph.SCHEMA_PATH.read_text())
    assert schema["properties"]["schema_version"] == {"const": CURRENT}
    assert f"v{CURRENT}" in schema["$id"] and f"schema_version {CURRENT}" in schema["title"]
