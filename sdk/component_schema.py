"""The JSON Schema (draft 2020-12) of a component file (component.yaml), for an editor's YAML
support and the Components page: GET /api/schemas/component.json serves `schema()`.

    # yaml-language-server: $schema=https://<this server>/api/schemas/component.json

It is built from the constants and declarations sdk/component.py checks a file with (its fields,
the required ones, the kind and step patterns, the launches, the port types, the parameter types
and the fields each one takes), so the two cannot drift: a field the checker learns and this file
does not describe fails `schema()` itself (KeyError), and tests/sdk/test_component_schema.py
loads the same bad files with both. The schema says less than the checker: what needs a file's
folder or another field's value (a default within its min and max, a placeholder naming a declared
input, the code folder being there) is only the checker's, and the wording of every problem a
person reads at upload is the checker's too. Imports nothing of the project but the SDK.
"""
from __future__ import annotations

from typing import Any

from sdk.component import DEFAULT_CATEGORY, FIELDS, KIND_PATTERN, LAUNCHES, MAX_VERSION, REQUIRED, STEP_PATTERN
from sdk.component_fields import (
    IMPLIED_DEFAULTS,
    NAME_PATTERN,
    NAME_RULE,
    PARAM_ALIASES,
    PARAM_FIELDS,
    PARAM_TYPES,
    PORT_ALIASES,
    PORT_FIELDS,
)
from sdk.declarations import INT_LIMIT, PORT_TYPES, ImageDirectory

__all__ = ["ID", "schema"]

ID = "/api/schemas/component.json"
DRAFT = "https://json-schema.org/draft/2020-12/schema"

_NOT_BLANK = r"\S"  # a text holding more than spaces
# a number as text: PyYAML (YAML 1.1) reads `1e-3` as text, which the checker takes as a number
_NUMBER_TEXT = r"^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$"
# fields only an input has (an output is always written: never optional, never laid out)
_INPUT_ONLY = ("optional", "layout")
_COMMON_PARAM_FIELDS = ("type", "label", "default", "help")  # then the type's own (PARAM_FIELDS)
_IMAGE_FOLDER = "image_folder"
_PER_NODE = "per_node"


def _text(description: str, pattern: str | None = None, null: bool = False) -> dict[str, Any]:
    s: dict[str, Any] = {"type": ["string", "null"] if null else "string", "description": description}
    if pattern:
        s["pattern"] = pattern
    return s


def _flag(description: str) -> dict[str, Any]:
    return {"type": "boolean", "description": description}


def _a(kind: str) -> str:
    return f"{'an' if kind[0] in 'aeiou' else 'a'} {kind}"


# --------------------------------------------------------------------------- the top-level fields


def _top_fields() -> dict[str, dict[str, Any]]:
    return {
        "kind": _text("The component's stable id, stored in pipeline JSON: never rename it. 1 to 64 lowercase letters, "
                      "digits or '_', starting with a letter.", KIND_PATTERN.pattern),
        "label": _text("Its name in the palette (may change).", _NOT_BLANK),
        "category": {**_text(f"The palette's group it is shown in (default: {DEFAULT_CATEGORY}).", null=True),
                     "default": DEFAULT_CATEGORY},
        "version": {"type": "integer", "minimum": 1, "maximum": MAX_VERSION, "default": 1,
                    "description": f"A whole number from 1 to {MAX_VERSION:,} (default 1). Uploading a new version of "
                                   "a kind keeps the older ones for the pipelines that use them."},
        "description": _text("What it does, shown in the pane.", null=True),
        "distributed": {**_flag("true: the pane offers Run settings (node count x process count per node)."),
                        "default": False},
        "launch": {"enum": [*LAUNCHES, None], "default": LAUNCHES[0],
                   "description": f"{LAUNCHES[0]} (default): the designer starts every process, each running the command; "
                                  f"{_PER_NODE}: one command per node, which starts that node's processes itself "
                                  "(needs `distributed: true`)."},
        "code": {**_text("The folder of the code, relative to this file and inside its folder (default: the file's folder). "
                         "A fresh copy of it is where the command runs.", _NOT_BLANK), "default": "."},
        "command": _text("The command line to run. {inputs.x}, {params.x} and {outputs.x} (or ${{inputs.x}}) are replaced "
                         "by an input's folder, a parameter's value and an output's folder; $[[ ... ]] is dropped when "
                         "the optional input inside it is not connected. Every output must be passed to it.", _NOT_BLANK),
        "inputs": _group("The inputs: name -> a port type, or {type, label, optional, help, layout}.", "#/$defs/input"),
        "outputs": _group("The outputs: name -> a port type, or {type, label, help}.", "#/$defs/output"),
        "params": _group("The parameters: name -> {type, default, label, help, and the type's own fields}.", "#/$defs/param"),
        "metrics": {"type": ["array", "null"], "uniqueItems": True, "items": _text("A metric name.", _NOT_BLANK),
                    "description": "The names of the metrics the script logs that a sweep may optimise."},
        "metric_step": {**_text("What a metric's step counts (default: step), such as epoch or iteration: the node shows "
                                "\"epoch 3/10\".", STEP_PATTERN.pattern, null=True), "default": "step"},
    }


def _group(description: str, ref: str) -> dict[str, Any]:
    return {"type": ["object", "null"], "description": f"{description} A name is {NAME_RULE}, and names one thing "
                                                      "of the component (the pipeline JSON stores it).",
            "propertyNames": {"pattern": NAME_PATTERN.pattern}, "additionalProperties": {"$ref": ref}}


# --------------------------------------------------------------------------- ports


def _port_type() -> dict[str, Any]:
    kinds = "; ".join(f"{t.name}: {t.words}" for t in PORT_TYPES.values())
    aliases = ", ".join(f"{alias} ({name})" for alias, name in PORT_ALIASES.items())
    return {"enum": [*PORT_TYPES, *PORT_ALIASES],
            "description": f"The port type: what the folder holds. {kinds}. Azure ML's names: {aliases}."}


def _port_fields() -> dict[str, dict[str, Any]]:
    return {
        "type": {"$ref": "#/$defs/portType"},
        "label": _text("Its name on the canvas (default: made from its name).", _NOT_BLANK, null=True),
        "optional": {**_flag("true: the node runs without it connected (put its placeholder in $[[ ... ]])."), "default": False},
        "help": _text("Shown with the port on the canvas.", null=True),
        "layout": {"enum": [_IMAGE_FOLDER, None],
                   "description": f"{_IMAGE_FOLDER}: an {ImageDirectory.name} given to the command as "
                                  "<folder>/<class>/<image> links, as torchvision's ImageFolder reads."},
    }


def _port(input: bool) -> dict[str, Any]:
    fields = _port_fields()
    names = [f for f in PORT_FIELDS if input or f not in _INPUT_ONLY]
    declared: dict[str, Any] = {"type": "object", "required": ["type"], "additionalProperties": False,
                                "properties": {f: fields[f] for f in names}}
    if input:
        declared["if"] = {"properties": {"layout": {"const": _IMAGE_FOLDER}}, "required": ["layout"]}
        declared["then"] = {"properties": {"type": {"const": ImageDirectory.name}}}
    side = "An input" if input else "An output"
    return {"description": f"{side}: its port type, or {{{', '.join(names)}}}.", "type": ["string", "object"],
            "if": {"type": "string"}, "then": {"$ref": "#/$defs/portType"}, "else": declared}


# --------------------------------------------------------------------------- parameters


def _bound(which: str) -> dict[str, Any]:
    return {"type": ["number", "string", "null"], "pattern": _NUMBER_TEXT,  # (the pattern: of a text only)
            "description": f"The {which} value (none: no {which} bound)."}


def _default(kind: str) -> dict[str, Any]:
    about = "The value a new node starts with"
    if kind == "int":
        return {"type": "integer", "minimum": -INT_LIMIT, "maximum": INT_LIMIT, "description": f"{about}: a whole number."}
    if kind == "float":
        return {"type": ["number", "string"], "pattern": _NUMBER_TEXT, "description": f"{about}: a number."}
    if kind == "bool":
        return {"type": "boolean", "description": f"{about}: true or false (default false)."}
    if kind == "choice":
        return {"type": ["string", "number"], "description": f"{about}: one of the choices (default: the first)."}
    return {"type": "string", "description": f"{about} (default empty)."}


def _param_fields(kind: str) -> dict[str, dict[str, Any]]:
    return {
        "type": {"enum": [k for k in (*PARAM_TYPES, *PARAM_ALIASES) if PARAM_ALIASES.get(k, k) == kind]},
        "label": _text("Its name in the pane (default: made from its name).", _NOT_BLANK, null=True),
        "default": _default(kind),
        "help": _text("Shown with the parameter in the pane.", null=True),
        "min": _bound("lowest"), "max": _bound("highest"),
        "min_exclusive": {**_flag("true: the value must be above min, not equal to it."), "default": False},
        "max_exclusive": {**_flag("true: the value must be below max, not equal to it."), "default": False},
        "choices": {"type": "array", "minItems": 1, "uniqueItems": True, "items": {"type": ["string", "number"]},
                    "description": "The values offered, texts or numbers, each once."},
        "multiline": {**_flag("true: the pane edits it in a box of several lines."), "default": False},
    }


def _param() -> dict[str, Any]:
    """`type` first, then per type (if/then) the fields that type takes: the checker refuses others."""
    kinds = []
    for kind in PARAM_TYPES:
        fields = _param_fields(kind)
        names = (*_COMMON_PARAM_FIELDS, *PARAM_FIELDS[kind])
        required = ["type", "choices"] if kind == "choice" else ["type"]
        if kind not in IMPLIED_DEFAULTS and kind != "choice":  # as the checker: no implied default, none first choice
            required.append("default")
        spelled = fields["type"]["enum"]
        kinds.append({"if": {"properties": {"type": {"enum": spelled}}, "required": ["type"]},
                      "then": {"description": f"{_a(kind)} parameter: {', '.join(names)}.", "required": required,
                               "additionalProperties": False, "properties": {f: fields[f] for f in names}}})
    spellings = ", ".join(f"{alias} ({kind})" for alias, kind in PARAM_ALIASES.items())
    return {"type": "object", "required": ["type"],
            "description": "A parameter: {type, default, label, help} and the fields of its type: "
                           + "; ".join(f"{k}: {', '.join(PARAM_FIELDS[k]) or 'none'}" for k in PARAM_TYPES) + ".",
            "properties": {"type": {"enum": [*PARAM_TYPES, *PARAM_ALIASES],
                                    "description": f"The parameter type: {', '.join(PARAM_TYPES)} (Azure ML's names: {spellings})."}},
            "allOf": kinds}


# --------------------------------------------------------------------------- the schema


def schema() -> dict[str, Any]:
    """The JSON Schema of a component file, as a new dict each call (JSON-ready)."""
    fields = _top_fields()
    return {
        "$schema": DRAFT,
        "$id": ID,
        "title": "Pipeline Designer component file (component.yaml)",
        "description": "A component: a module of the canvas declared in YAML, whose command runs your own code. "
                       f"Required: {', '.join(REQUIRED)}. The server checks more than this schema says (a default "
                       "within its range, every placeholder of the command naming a declared input, parameter or "
                       "output, the code folder) and names the file, the field and the reason of each problem.",
        "type": "object",
        "required": list(REQUIRED),
        "additionalProperties": False,
        "properties": {name: fields[name] for name in FIELDS},
        "if": {"properties": {"launch": {"const": _PER_NODE}}, "required": ["launch"]},
        "then": {"properties": {"distributed": {"const": True}}, "required": ["distributed"]},
        "$defs": {"portType": _port_type(), "input": _port(input=True), "output": _port(input=False), "param": _param()},
    }
