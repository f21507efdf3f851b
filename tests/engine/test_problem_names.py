"""Defect 9 of issue 15: a problem's text names its node by its module's label ("Toy add"), with
the id in brackets where two nodes share a label ("Toy add (b)"), no longer "node 'n5'". The
`node` field keeps the id: the page marks that node with it."""
import pytest

from designer.engine import graph, parameters
from designer.engine.problems import PipelineInvalid, Problem
from modules import catalogue as module_catalogue
from tests import toy_modules as toys
from tests.pipes import link, node, pipeline

CAT = module_catalogue.Catalogue([toys.ToySource, toys.ToyAdd, toys.ToySink])


def texts(problems):
    return [str(p) for p in problems]


def test_a_problem_names_its_node_by_label_and_keeps_the_id():
    (problem,) = graph.validate(pipeline([node("n5", "toy_source", value=5000)], []), CAT)
    assert problem.node == "n5" and problem.param == "value"
    assert str(problem) == "Toy source, parameter 'value': Value: 5000 is out of range: must be >= 0 and <= 1000"
    assert problem.as_dict()["text"] == str(problem) and problem.as_dict()["node"] == "n5"


def test_two_nodes_of_one_module_are_told_apart_by_their_ids():
    doc = pipeline([node("a", "toy_source", value=1), node("b", "toy_add"), node("c", "toy_add")], [link("a", "b")])
    assert texts(graph.validate(doc, CAT)) == ["Toy add (c): required input 'Input' (images with a labels index) is not connected"]


def test_a_cycle_is_told_in_labels():
    doc = pipeline([node("x", "toy_add"), node("y", "toy_sink")], [link("x", "y"), link("y", "x", dst_port="input")])
    cycle = [p for p in graph.validate(doc, CAT) if p.code == "cycle"]
    assert cycle and "the links form a cycle: " in str(cycle[0])
    assert "Toy add -> " in str(cycle[0]) or "Toy sink -> " in str(cycle[0])
    assert "'x'" not in str(cycle[0]) and cycle[0].node in ("x", "y")


@pytest.mark.parametrize(("doc", "text"), [
    (pipeline([node("n1", "nope")], []), "node 'n1': unknown module kind 'nope'"),  # no label to give
    (pipeline([node("a", "toy_source", value=1), node("a", "toy_add")], []), "node 'a': two nodes have this id"),
])
def test_a_node_without_a_label_of_its_own_is_named_by_id(doc, text):
    assert text in texts(graph.validate(doc, CAT))[0]


def test_a_problem_found_at_submit_names_the_node_by_label_too():
    doc = pipeline([node("a", "toy_source", value=1)], [])
    doc["parameters"] = [{"name": "v", "type": "int", "default": 1}]
    doc["nodes"][0]["bindings"] = {"value": "v"}
    with pytest.raises(PipelineInvalid) as e:
        parameters.resolve(doc, {"v": 5000}, CAT)
    assert str(e.value).startswith("Toy source, parameter 'value': Value is bound to pipeline parameter 'v': its value 5000")


def test_a_problem_without_a_label_reads_as_before():
    assert str(Problem("gone", node="n5", param="p")) == "node 'n5', parameter 'p': gone"
