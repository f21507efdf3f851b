"""The pipeline document described in the API's OpenAPI document (designer/pipelines/runs/
document_schema.py): a client generated from /api/openapi.json knows every node's kind, its
parameters (type, range, choices, default), run settings and bindings, so that it writes a
pipeline the server takes without a round trip through /api/modules and /api/validate."""
from __future__ import annotations

import copy
import json

import jsonschema
import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.django_db
DIGITS = json.loads((ROOT / "examples" / "digits.json").read_text())
# problems of what the schema describes (a schema-valid document must have none of them); the
# others need what a schema cannot know: a dataset of yours, weights on the workers, a link's types
DESCRIBED = {"schema", "bad_id", "unknown_kind", "unknown_param", "bad_value"}


@pytest.fixture(scope="module")
def document(django_db_blocker):
    from django.test import Client
    with django_db_blocker.unblock():
        return Client().get("/api/openapi.json").json()


def validator(document, name="PipelineDocument"):
    """A JSON Schema validator of one of the document's schemas, its references resolved in it."""
    return jsonschema.Draft202012Validator({**document, "$ref": f"#/components/schemas/{name}"})


def errors(document, doc) -> list[str]:
    """"path: message" of every error, those under a oneOf's branches too (the branch of a node's
    own kind names the parameter)."""
    def leaves(error):
        yield error
        for inner in error.context or ():
            yield from leaves(inner)
    return ["/".join(map(str, e.absolute_path)) + ": " + e.message
            for top in validator(document).iter_errors(doc) for e in leaves(top)]


def test_the_digits_example_follows_the_documented_schema(document):
    assert errors(document, DIGITS) == []


def test_every_body_that_takes_a_pipeline_document_names_its_schema(document):
    ref = {"$ref": "#/components/schemas/PipelineDocument"}
    paths = document["paths"]
    assert paths["/api/validate"]["post"]["requestBody"]["content"]["application/json"]["schema"] == ref
    assert paths["/api/pipelines/import"]["post"]["requestBody"]["content"]["application/json"]["schema"] == ref
    new = paths["/api/pipelines"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert new["properties"]["draft"] == ref


def _digits_with(change) -> dict:
    doc = copy.deepcopy(DIGITS)
    change({n["id"]: n for n in doc["nodes"]})
    return doc


@pytest.mark.parametrize("change, where", [
    (lambda n: n["train"]["parameters"].update(epochs="five"), "nodes/7/parameters/epochs"),
    (lambda n: n["train"]["parameters"].update(epochs=2.5), "nodes/7/parameters/epochs"),
    (lambda n: n["train"]["parameters"].update(learning_rate=0), "nodes/7/parameters/learning_rate"),
    (lambda n: n["train"]["parameters"].update(mixed_precision="fp8"), "nodes/7/parameters/mixed_precision"),
    (lambda n: n["split"]["parameters"].update(fraction=1.5), "nodes/2/parameters/fraction"),
    (lambda n: n["resnet"]["parameters"].update(pretrained="yes"), "nodes/6/parameters/pretrained"),
    (lambda n: n["resnet"]["parameters"].update(depth=18), "nodes/6/parameters"),
    (lambda n: n["score"].update(kind="score_the_model"), "nodes/8"),
    (lambda n: n["score"].update(run_settings={"node_count": 2}), "nodes/8/run_settings/node_count"),
    (lambda n: n["train"].update(run_settings={"node_count": 65}), "nodes/7/run_settings/node_count"),
    (lambda n: n["train"].update(bindings={"no_such_parameter": "lr"}), "nodes/7/bindings"),
])
def test_a_wrong_kind_parameter_or_run_setting_fails_the_schema_naming_where(document, change, where):
    found = errors(document, _digits_with(change))
    assert found and any(e.startswith(where + ":") for e in found), found


def test_the_server_refuses_what_the_schema_refuses(document, owner_client):
    doc = _digits_with(lambda n: n["train"]["parameters"].update(epochs="five"))
    answer = owner_client.post("/api/validate", json.dumps(doc), content_type="application/json").json()
    assert not answer["valid"] and any(p["node"] == "train" and p["param"] == "epochs" for p in answer["problems"])


def test_a_pipeline_written_from_the_document_alone_has_no_problem_it_describes(document, owner_client):
    """A client that knows only the document writes one node of every kind with every parameter's
    documented default: the schema takes it, and the server finds no problem of kind, parameter
    or value in it."""
    schemas = document["components"]["schemas"]
    mapping = schemas["PipelineNode"]["discriminator"]["mapping"]
    assert {"dataset", "train_pytorch_model", "resnet", "score_image_model"} <= set(mapping)
    nodes = []
    for i, (kind, ref) in enumerate(sorted(mapping.items())):
        params = schemas[ref.rsplit("/", 1)[1]]["properties"]["parameters"]["properties"]
        values = {name: p["default"] for name, p in params.items() if p["default"] is not None and not p.get("readOnly")}
        nodes.append({"id": f"n{i}", "kind": kind, "parameters": values})
    doc = {"schema_version": 3, "nodes": nodes, "links": []}
    assert errors(document, doc) == []
    answer = owner_client.post("/api/validate", json.dumps(doc), content_type="application/json").json()
    assert [p for p in answer["problems"] if p["code"] in DESCRIBED] == []


def test_a_parameters_declaration_is_what_the_document_says(document):
    train = document["components"]["schemas"]["TrainPytorchModelNode"]["properties"]
    epochs = train["parameters"]["properties"]["epochs"]
    assert epochs["type"] == "integer" and epochs["exclusiveMinimum"] == 0 and epochs["default"] == 5
    assert train["parameters"]["properties"]["mixed_precision"]["enum"] == ["auto", "bf16", "fp16", "off"]
    assert train["run_settings"]["properties"]["node_count"]["maximum"] == 64
    dataset = document["components"]["schemas"]["DatasetNode"]["properties"]["parameters"]["properties"]
    assert dataset["stored_file"]["readOnly"] is True


def test_a_runs_object_is_described_with_its_name_experiment_tags_source_and_metrics(document):
    run = document["components"]["schemas"]["RunSummary"]
    for field in ("name", "experiment", "tags", "source", "metrics"):
        assert field in run["properties"] and field in run["required"], field
    assert "api" in run["properties"]["source"]["enum"]


def test_the_document_stays_small(document):
    assert len(json.dumps(document)) < 400_000
