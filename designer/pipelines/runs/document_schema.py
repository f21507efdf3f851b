"""The pipeline document as the API's OpenAPI document describes it: the file format's JSON Schema
(designer/engine/pipeline.schema.json, the shape the server checks first) with each node described
by its module kind, from the module catalogue's declarations: `kind` one of the installed kinds,
and per kind its parameters (type, range, choices, default: sdk/param_schema.py), its run settings
and the parameters it may bind. Nothing here is written per module: a module added to modules/ (or
a component file to a settings folder) is described by its declaration alone.

It describes the installation's catalogue (built-in modules and the settings folders' components,
what every user has), not a user's uploaded components: the document is one for everyone, read
without signing in, and a client generated from it serves every user. GET /api/modules lists a
user's own components too, and the server takes their nodes.

A document this schema takes is one the server reads without a problem of shape, kind, type or
range; what a schema cannot say (a link's port types, a cycle, a dataset that is yours) is still
`POST /api/validate`'s to name.
"""
from __future__ import annotations

import copy
import json
import re

from designer.engine import graph, parameters, schema_migrations
from designer.pipelines.catalogue.service import get_catalogue
from designer.pipelines.datasets.service import DATASET_KIND
from sdk.declarations import Module
from sdk.param_schema import value_schema

NAME = "PipelineDocument"
NODE = "PipelineNode"
# a Dataset node's dataset given by name in a file: an import (and run_pipeline, and a submit) looks
# it up among yours (datasets.service.resolve_names); examples/digits.json names "digits"
BY_NAME = {(DATASET_KIND, "dataset"): {"type": "string", "minLength": 1,
                                       "description": "one of your datasets by name: its latest version, or "
                                                      "\"name:N\" for version N (a run records the version's id)"}}


_VERSION = {"type": "integer", "enum": list(range(schema_migrations.OLDEST, schema_migrations.CURRENT + 1)),
            "default": schema_migrations.CURRENT,
            "description": f"write {schema_migrations.CURRENT}; an older file is read through the format's migrations"}


def _file_format() -> dict:
    """The file format's schema with its $defs written in place (a schema inside an OpenAPI
    document has no $defs of its own to point at) and without its $id and $schema."""
    schema = json.loads(graph.SCHEMA_PATH.read_text())
    defs = schema.pop("$defs")

    def inline(value):
        if isinstance(value, dict):
            target = value.get("$ref", "")
            if target.startswith("#/$defs/"):
                return inline(defs[target.removeprefix("#/$defs/")])
            return {k: inline(v) for k, v in value.items()}
        return [inline(v) for v in value] if isinstance(value, list) else value

    return {k: v for k, v in inline({**schema, "node": defs["node"]}).items() if k not in ("$schema", "$id")}


def component_name(kind: str) -> str:
    """The name of a kind's node schema among the document's: train_pytorch_model ->
    TrainPytorchModelNode (a client generator makes a class of each)."""
    return "".join(part.capitalize() for part in re.split(r"[^A-Za-z0-9]+", kind) if part) + "Node"


def _run_settings(module: type[Module], base: dict) -> dict:
    """The run settings a node of this module takes (graph._run_setting_problems' rules)."""
    if module.distributed:
        count = {"type": "integer", "minimum": 1, "maximum": graph.MAX_RUN_SETTING, "default": 1}
    else:
        count = {"const": 1, "description": f"{module.label} runs as a single process"}
    timeout = ({"type": "integer", "minimum": 0, "maximum": graph.MAX_TIMEOUT_SECONDS, "default": 0,
                "description": "its command is ended past it; 0: no limit"}
               if module.timeout_setting else {"const": 0, "description": f"{module.label} has no timeout"})
    properties = {"node_count": {**count, "title": graph.RUN_SETTING_LABELS["node_count"]},
                  "process_count_per_node": {**count, "title": graph.RUN_SETTING_LABELS["process_count_per_node"]},
                  "timeout_seconds": {**timeout, "title": graph.RUN_SETTING_LABELS["timeout_seconds"]},
                  "max_retries": {"type": "integer", "minimum": 0, "maximum": graph.MAX_RETRIES,
                                  "default": graph.DEFAULT_MAX_RETRIES, "title": graph.RUN_SETTING_LABELS["max_retries"],
                                  "description": "how many times the node runs again, from its last checkpoint, "
                                                 "when its worker is lost; 0: never"}}
    return {**base, "properties": {**base["properties"], **properties}}


def _parameter(module: type[Module], param) -> dict:
    schema = value_schema(param)
    by_name = BY_NAME.get((module.kind, param.name))
    if by_name is None:
        return schema
    own = {k: v for k, v in schema.items() if k not in ("title", "default", "description", "readOnly")}
    return {"anyOf": [own, by_name], **{k: v for k, v in schema.items() if k not in own}}


def node_schema(module: type[Module], versions: list[int], base: dict) -> dict:
    """A node of this module kind: the file format's node, its kind, parameters, run settings and
    bindings said by the module's declaration."""
    bindable = [p.name for p in module.params if not p.filled_by_server]
    properties = {
        **base["properties"],
        "kind": {"const": module.kind, "description": f"{module.label} ({module.category})"},
        "parameters": {"type": "object", "additionalProperties": False,
                       "description": "its parameters' values; one left out takes its default",
                       "properties": {p.name: _parameter(module, p) for p in module.params}},
        "run_settings": _run_settings(module, base["properties"]["run_settings"]),
        "bindings": {**base["properties"]["bindings"], "propertyNames": {"enum": bindable},
                     "additionalProperties": {"type": "string", "pattern": f"^{parameters.NAME.pattern}$"}},
    }
    if module.component is not None:
        properties["version"] = {**base["properties"]["version"], "enum": versions}
    described = module.description or (module.__doc__ or "").strip()
    return {**base, "title": module.label, "description": described, "properties": properties}


def _pipeline_parameter(base: dict) -> dict:
    """A pipeline parameter, its name and type said as the server checks them (engine/parameters.py)."""
    properties = base["properties"]
    return {**base, "properties": {
        **properties,
        "name": {"type": "string", "pattern": f"^{parameters.NAME.pattern}$"},
        "type": {"enum": list(parameters.TYPES)},
        "default": {"type": ["number", "boolean", "string"], "description": properties["default"]["description"]}}}


def schemas(catalogue=None) -> dict[str, dict]:
    """{name: schema}: the pipeline document (NAME), the node of any kind (NODE, a oneOf on
    `kind`) and one node schema per kind of `catalogue` (default: the installation's)."""
    catalogue = get_catalogue(None) if catalogue is None else catalogue
    fmt = _file_format()
    base = fmt.pop("node")
    nodes = {component_name(m.kind): node_schema(m, catalogue.versions(m.kind), copy.deepcopy(base)) for m in catalogue}
    ref = "#/components/schemas/{}".format
    node = {"description": "a node: one module of the installation's catalogue, told by its `kind`",
            "oneOf": [{"$ref": ref(name)} for name in nodes],
            "discriminator": {"propertyName": "kind",
                              "mapping": {m.kind: ref(component_name(m.kind)) for m in catalogue}}}
    properties = fmt["properties"]
    document = {**fmt, "title": "Pipeline document", "properties": {
        **properties, "schema_version": _VERSION,
        "nodes": {**properties["nodes"], "items": {"$ref": ref(NODE)}},
        "parameters": {**properties["parameters"], "items": _pipeline_parameter(properties["parameters"]["items"])}}}
    return {NAME: document, NODE: node, **nodes}


def file_schema() -> dict:
    """The file format's shape alone (a node of any kind, any parameters): what a stored draft or
    an export holds, which may still have problems to fix (an uploaded component's node, a value
    out of range) before it runs."""
    fmt = _file_format()
    fmt.pop("node")
    return {**fmt, "title": "Pipeline file", "properties": {**fmt["properties"], "schema_version": _VERSION}}


def stamp():
    """What the schemas are made of: the installation's catalogue (a new object once a settings
    folder's component file changes)."""
    return get_catalogue(None)
