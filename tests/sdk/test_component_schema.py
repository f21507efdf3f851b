"""The JSON Schema of a component file (sdk/component_schema.py): a valid draft 2020-12 schema,
built from the checker's own declarations; every component file the project ships passes it; the
schema and the checker (sdk/component.py) refuse the same bad files, but for the few refusals a
schema cannot make, listed below; GET /api/schemas/component.json serves it to anyone."""
from __future__ import annotations

import glob
import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from sdk import azure_component, component, component_schema
from sdk.component import FIELDS, LAUNCHES, REQUIRED, ComponentError
from sdk.component_fields import PARAM_ALIASES, PARAM_FIELDS, PARAM_TYPES, PORT_ALIASES, PORT_FIELDS
from sdk.declarations import PORT_TYPES
from tests.sdk.test_component import INVALID, VALID, changed, write

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = component_schema.schema()
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)

# The refusals only the checker makes (the schema accepts these files); its wording is what a
# person reads at upload in any case:
#   - what needs another field's value: a default out of its min/max range, an empty range, a
#     choice default that is not one of the choices, a float default past 1e12 with no bound on
#     that side, a name used by two of inputs/outputs/params, two ports of one side with one label;
#   - the command: a placeholder naming no declared input/param/output or no group, an optional
#     input outside $[[ ]], a group with no optional input or never closed, unbalanced quotes, an
#     output the command never passes;
#   - the file's folder: a code folder that is not there, or leads outside the component's folder;
#   - JSON Schema's integer is a number with no fraction: `version: 2.0` passes it, not the checker.
CHECKER_ONLY = {
    "default out of range", "empty range", "default not a choice", "float default past its implied bound",
    "name used twice", "label used twice",
    "placeholder naming nothing", "unknown placeholder group", "optional input outside a group",
    "group without optional input", "group never closed", "unbalanced quote", "output never passed",
    "code folder missing", "code folder outside", "version a whole float",
}
# refused while the YAML text is read (sdk/yamltext.py), before any value is checked: not YAML, too
# deep, a huge integer, aliases standing for too many values, a NUL character (no database stores it)
YAML_LEVEL = {"not YAML", "nested thousands deep", "an integer of 5000 digits", "billion laughs", "a NUL character"}


def nulled(*dotted: str) -> dict:
    """VALID with the fields given set to null (YAML's `field:` with nothing after it)."""
    doc = changed()
    for path in dotted:
        *parents, last = path.split("__")
        target = doc
        for p in parents:
            target = target[p]
        target[last] = None
    return doc


# bad files besides those of test_component.py's table: both refuse each
MORE_INVALID = [
    ("output laid out", changed(outputs__model__layout="image_folder")),
    ("layout not a layout", changed(inputs__data__layout="tree")),
    ("image_folder of another type", changed(inputs__validation__layout="image_folder")),
    ("port declared as nothing", nulled("inputs__validation")),
    ("optional not a flag", changed(inputs__validation__optional="yes")),
    ("port label empty", changed(inputs__data__label=" ")),
    ("kind null", nulled("kind")),
    ("label blank", changed(label="  ")),
    ("version null", nulled("version")),
    ("code blank", changed(code=" ")),
    ("param not a mapping", changed(params__note="hello")),
    ("param without type", changed(params__note={"default": "x"})),
    ("choice without choices", changed(params__optimizer__choices=None)),
    ("choices of flags", changed(params__optimizer__choices=[True, False], params__optimizer__default=True)),
    ("int default as text", changed(params__epochs__default="5")),
    ("float default as words", changed(params__lr__default="small")),
    ("string default a number", changed(params__note__default=3)),
    ("bool default null", nulled("params__pretrained__default")),
    ("exclusive not a flag", changed(params__lr__min_exclusive="yes")),
    ("a choice field on a number", changed(params__epochs__choices=[1, 2])),
    ("metric named twice", changed(metrics=["loss", "loss"])),
    ("metric blank", changed(metrics=["loss", " "])),
    ("distributed null", nulled("distributed")),
    # checker-only (CHECKER_ONLY)
    ("float default past its implied bound", changed(params__lr__default=1e13)),
    ("version a whole float", changed(version=2.0)),
]

# good files besides VALID: both accept each
MORE_VALID = [
    ("short forms and Azure's names", {
        "kind": "short", "label": "Short", "command": "python3 run.py {outputs.out} {params.rate}",
        "outputs": {"out": "folder"}, "params": {"rate": {"type": "float", "default": "1e-3"},
                                                "mode": {"type": "choice", "choices": ["a", "b"]},
                                                "num_epochs": {"type": "integer", "default": 2},
                                                "flag": {"type": "boolean"}, "text": {"type": "str", "multiline": True}}}),
    ("empty optional fields", nulled("category", "description", "launch", "metrics", "metric_step",
                                     "inputs__data__label", "params__lr__max", "params__epochs__help")),
    ("image folder", changed(inputs__data__layout="image_folder")),
    ("per-node launch", changed(launch="per_node")),
    ("numbers as text", changed(params__lr__default="0.5", params__epochs__max="1e3")),
    ("a whole float default", changed(params__epochs__default=3.0)),
]

BAD = [(what, doc) for what, doc, *_ in INVALID] + MORE_INVALID


def schema_errors(data) -> list[str]:
    return [f"{e.json_path}: {e.message}" for e in VALIDATOR.iter_errors(data)]


def shipped() -> list[Path]:
    files = [*glob.glob(str(ROOT / "examples" / "components" / "*" / "component.yaml")),
             *glob.glob(str(ROOT / "tests" / "components" / "**" / "component.yaml"), recursive=True)]
    return sorted(Path(f) for f in files)


def test_the_schema_is_a_draft_2020_12_schema():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert SCHEMA["$id"] == "/api/schemas/component.json" and SCHEMA["title"] and SCHEMA["description"]
    assert json.loads(json.dumps(SCHEMA)) == SCHEMA  # JSON as it is
    assert component_schema.schema() == SCHEMA and component_schema.schema() is not component_schema.schema()


def test_the_schema_is_built_from_the_checkers_declarations():
    assert list(SCHEMA["properties"]) == list(FIELDS) and SCHEMA["required"] == list(REQUIRED)
    assert SCHEMA["additionalProperties"] is False
    assert SCHEMA["properties"]["launch"]["enum"] == [*LAUNCHES, None]
    assert SCHEMA["$defs"]["portType"]["enum"] == [*PORT_TYPES, *PORT_ALIASES]
    assert list(SCHEMA["$defs"]["input"]["else"]["properties"]) == list(PORT_FIELDS)
    param = SCHEMA["$defs"]["param"]
    assert param["properties"]["type"]["enum"] == [*PARAM_TYPES, *PARAM_ALIASES]
    by_type = {rule["if"]["properties"]["type"]["enum"][0]: rule["then"] for rule in param["allOf"]}
    assert list(by_type) == list(PARAM_TYPES)
    for kind, then in by_type.items():
        assert list(then["properties"]) == ["type", "label", "default", "help", *PARAM_FIELDS[kind]]
    # every field, port and parameter is described for an editor's hover
    assert all(s.get("description") for s in SCHEMA["properties"].values())


def test_every_shipped_component_file_passes_the_schema():
    files = shipped()
    assert len(files) >= 9, files
    for file in files:
        component.load(file)  # the checker's too
        data = yaml.safe_load(file.read_text())
        if not azure_component.is_v2(data):  # an Azure ML v2 file (mlflow_pytorch) follows Azure's schema, its $schema
            assert schema_errors(data) == [], file


@pytest.mark.parametrize("what, doc", [("VALID", VALID), *MORE_VALID], ids=["VALID", *(w for w, _ in MORE_VALID)])
def test_the_checker_and_the_schema_accept_the_same_good_files(tmp_path, what, doc):
    path = write(tmp_path / "c", doc)
    component.load(path)
    assert schema_errors(yaml.safe_load(path.read_text())) == []


@pytest.mark.parametrize("what, doc", BAD, ids=[what for what, _ in BAD])
def test_the_checker_and_the_schema_refuse_the_same_bad_files(tmp_path, what, doc):
    path = write(tmp_path / "c", **({"text": doc} if isinstance(doc, str) else {"doc": doc}))
    with pytest.raises(ComponentError):
        component.load(path)
    if what in YAML_LEVEL:
        return  # no value for a schema to see (or one not to expand: billion laughs)
    errors = schema_errors(yaml.safe_load(path.read_text()))
    if what in CHECKER_ONLY:
        assert errors == [], f"the schema refuses it now: take {what!r} off CHECKER_ONLY"
    else:
        assert errors, f"the checker refuses {what!r}, the schema does not"


def test_the_lists_of_exceptions_name_cases_that_exist():
    assert (CHECKER_ONLY | YAML_LEVEL) <= {what for what, _ in BAD}


@pytest.mark.django_db
def test_the_schema_is_served_to_anyone(client):
    response = client.get("/api/schemas/component.json")
    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    assert response.json() == SCHEMA
    assert client.post("/api/schemas/component.json").status_code == 405


def test_the_components_page_points_an_editor_at_the_schema(owner_client):
    page = owner_client.get("/components/").content.decode()
    assert '<a href="/api/schemas/component.json">' in page
    assert "# yaml-language-server: $schema=http://testserver/api/schemas/component.json" in page
