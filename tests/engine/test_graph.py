import json

import pytest

from designer.engine import graph
from designer.engine.schema_migrations import CURRENT
from modules import catalogue as module_catalogue
from tests import toy_modules as toys
from tests.conftest import ROOT
from tests.pipes import link, node, pipeline

CAT = module_catalogue.Catalogue([toys.ToySource, toys.ToyAdd, toys.ToySink])


def codes(problems):
    return sorted(p.code for p in problems)


def test_a_valid_pipeline_has_no_problems():
    doc = pipeline([node("a", "toy_source", value=3), node("b", "toy_add")], [link("a", "b")])
    assert graph.validate(doc, CAT) == []


def test_it_reports_every_problem_at_once_naming_where():
    doc = pipeline(
        [
            node("a", "toy_source", value=5000),  # out of range
            node("b", "toy_add", amount="two", colour=1),  # wrong type, unknown parameter
            node("c", "no_such_module"),
            node("d", "toy_sink"),  # fed by an incompatible type below
            node("e", "toy_add"),  # required input missing
            node("f", "toy_add"),
        ],
        [
            link("a", "b"),
            link("a", "b", lid="again"),  # fed twice
            link("b", "d", dst_port="scores"),  # ImageDirectory -> ScoredDataset
            link("ghost", "f"),  # missing node
            link("a", "f", dst_port="nope", lid="badport"),  # missing port
        ],
    )
    problems = graph.validate(doc, CAT)
    by_code = {p.code: p for p in problems}
    assert codes(problems) == sorted(
        ["bad_value", "bad_value", "unknown_param", "unknown_kind", "incompatible", "fed_twice",
         "missing_input", "missing_node", "missing_port"])
    assert by_code["unknown_kind"].node == "c" and "no_such_module" in by_code["unknown_kind"].message
    assert by_code["unknown_param"].param == "colour" and "amount" in by_code["unknown_param"].message
    range_problem = next(p for p in problems if p.code == "bad_value" and p.node == "a")
    assert range_problem.param == "value" and "<= 1000" in str(range_problem)
    type_problem = next(p for p in problems if p.code == "bad_value" and p.node == "b")
    assert "whole number" in type_problem.message
    # said in the ports' labels and the types' words, not in ids or type names
    assert by_code["incompatible"].message == ("its input 'Scores' takes only a table of predictions, and the output 'Out' "
                                               "linked to it gives images with a labels index")
    assert by_code["fed_twice"].node == "b" and by_code["fed_twice"].port == "input"
    assert {p.node for p in problems if p.code == "missing_input"} == {"e"}
    assert by_code["missing_port"].port == "nope" and "input" in by_code["missing_port"].message
    assert "ghost" in by_code["missing_node"].message


def test_it_rejects_a_cycle():
    doc = pipeline([node("a", "toy_source"), node("b", "toy_add"), node("c", "toy_add")],
                   [link("a", "b", dst_port="extra"), link("b", "c"), link("c", "b")])
    problems = graph.validate(doc, CAT)
    assert [p.code for p in problems] == ["cycle"]
    assert "b" in problems[0].message and "c" in problems[0].message


def test_malformed_json_says_where():
    with pytest.raises(graph.PipelineInvalid) as e:
        graph.parse_text('{"schema_version": 1, "nodes": [}')
    assert "not valid JSON" in str(e.value) and "line 1" in str(e.value)


@pytest.mark.parametrize("version,words", [(CURRENT + 1, "newer Pipeline Designer"), (0, "older than any"), (None, "no schema_version")])
def test_an_unreadable_schema_version_is_explained(version, words):
    doc = {"nodes": [], "links": []} | ({"schema_version": version} if version is not None else {})
    with pytest.raises(graph.PipelineInvalid) as e:
        graph.parse_text(json.dumps(doc))
    assert words in str(e.value)


def test_shape_problems_name_the_node():
    doc = pipeline([{"id": "a", "kind": "toy_source", "parameters": {}, "colour": "red"}], [])
    problems = graph.validate(doc, CAT)
    assert problems and problems[0].code == "schema" and problems[0].node == "a"
    assert "colour" in problems[0].message


def test_run_settings_are_checked():
    n = node("a", "toy_source") | {"run_settings": {"node_count": 2}}
    problems = graph.validate(pipeline([n], []), CAT)
    assert problems[0].param == "node_count" and "single process" in problems[0].message


def test_canonical_text_is_stable():
    doc = pipeline([node("a", "toy_source", value=3)], [])
    text = graph.dumps(doc)
    assert graph.dumps(graph.parse_text(text)) == text


def test_a_trained_model_feeds_train_pytorch_models_untrained_model_to_fine_tune():
    """The digits example as stored (schema 1, without Sync BatchNorm nor Freeze backbone), plus a
    second Train PyTorch Model that starts from the first one's trained model."""
    catalogue = module_catalogue.load()
    doc = graph.upgrade(json.loads((ROOT / "examples" / "digits.json").read_text()))
    next(n for n in doc["nodes"] if n["kind"] == "dataset")["parameters"]["dataset"] = 1  # the user picks theirs
    train = next(n for n in doc["nodes"] if n["kind"] == "train_pytorch_model")
    assert "freeze_backbone" not in train["parameters"]
    again = node("again", "train_pytorch_model", freeze_backbone=True)
    fed = [link("apply_train", "again", "transformed_image_directory", "training_dataset"),
           link("apply_val", "again", "transformed_image_directory", "validation_dataset")]
    tuned = {**doc, "nodes": [*doc["nodes"], again],
             "links": [*doc["links"], link("train", "again", "trained_model", "untrained_model"), *fed]}
    assert graph.validate(tuned, catalogue) == []
    assert catalogue.get("train_pytorch_model").resolved_params(train["parameters"])["freeze_backbone"] is False

    images = {**tuned, "links": [*doc["links"], link("apply_val", "again", "transformed_image_directory", "untrained_model"), *fed]}
    problems = graph.validate(images, catalogue)
    assert [(p.code, p.node, p.port) for p in problems] == [("incompatible", "again", "untrained_model")]
    assert str(problems[0]) == (
        "Train PyTorch Model (again): its input 'Untrained model' takes only an untrained PyTorch model and its settings or a "
        "trained model with its classes and transforms, and the output 'Transformed image directory' linked to it gives "
        "images with a labels index")
    # nothing else widened: a trained model feeds no dataset input
    as_data = {**tuned, "links": [*tuned["links"][:-1], link("train", "again", "trained_model", "validation_dataset")]}
    assert [p.code for p in graph.validate(as_data, catalogue)] == ["incompatible"]
