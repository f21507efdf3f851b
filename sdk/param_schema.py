"""The JSON Schema (draft 2020-12) of a module parameter's value, from its declaration
(sdk/declarations.py): what `Param.check` takes, said as a schema, so that the API's description
of a pipeline document (designer/pipelines/runs/document_schema.py) is derived from the same
declarations the server checks a document with.

    Int("Epochs", default=5, min=0, min_exclusive=True)
    -> {"type": "integer", "exclusiveMinimum": 0, "maximum": 9223372036854775807, "default": 5, ...}

The schema never takes a value the check refuses: an Int or a Float with no declared bound is
bounded still, as its check bounds it (INT_LIMIT, FLOAT_LIMIT). It may say less than the check
where a schema cannot (none such today). Imports nothing of the project but the SDK.
"""
from __future__ import annotations

from typing import Any

from sdk.declarations import FLOAT_LIMIT, INT_LIMIT, Bool, Choice, Float, Int, Param, Text


def _bounds(param: Int | Float, limit: float) -> dict[str, Any]:
    """minimum/maximum (or their exclusive forms) of a ranged parameter; a side with no declared
    bound takes the check's own limit."""
    schema: dict[str, Any] = {}
    for side, bound, exclusive, fallback in (("minimum", param.min, param.min_exclusive, -limit),
                                              ("maximum", param.max, param.max_exclusive, limit)):
        if bound is None:
            schema[side] = fallback
        elif exclusive:
            schema["exclusive" + side.capitalize()] = bound
        else:
            schema[side] = bound
    return schema


def _type(param: Param) -> dict[str, Any]:
    if isinstance(param, Int):
        return {"type": "integer", **_bounds(param, INT_LIMIT)}
    if isinstance(param, Float):
        return {"type": "number", **_bounds(param, FLOAT_LIMIT)}
    if isinstance(param, Bool):
        return {"type": "boolean"}
    if isinstance(param, Choice):
        return {"enum": list(param.choices)}
    if isinstance(param, Text):
        return {"type": "string"}
    return {}  # a Param of its own kind: its check alone says what it takes


def value_schema(param: Param) -> dict[str, Any]:
    """The schema of `param`'s value in a node's `parameters`: its type, range or choices, its
    label, help and default. A parameter with no default also takes null (a value not chosen yet,
    the same as leaving it out); one the server fills in at submit is readOnly (what a document
    holds there is replaced)."""
    schema = _type(param)
    if (param.default is None or getattr(param, "may_be_empty", False)) and schema:  # (an optional v2 input)
        schema = ({**schema, "enum": [*schema["enum"], None]} if "enum" in schema
                  else {**schema, "type": [schema["type"], "null"]})
    schema = {**schema, "title": param.label, "default": param.default}
    if param.help:
        schema["description"] = param.help
    if param.filled_by_server:
        schema["readOnly"] = True
    return schema
