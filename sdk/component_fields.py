"""The fields of a component file that declare ports and parameters (sdk/component.py reads the
rest): each turned into the same sdk.declarations Port and Param a built-in module declares, so
that the palette, the pane and validation treat both alike. Every problem is collected with its
field, and ComponentError names the file, the field and the reason."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from sdk.declarations import PORT_TYPES, AnyDirectory, Bool, Choice, Float, Int, ModelDirectory, Param, Port, Text
from sdk.yamltext import short

NAME_PATTERN = re.compile(r"^[a-z_][a-z0-9_]{0,63}$")
NAME_RULE = "1 to 64 lowercase letters, digits or '_', not starting with a digit"
# an Azure ML v2 file's input and output names (Python identifiers: `A`, `learning_rate`), as a pipeline
# parameter's (designer/engine/parameters.py)
V2_NAME_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
V2_NAME_RULE = "1 to 64 letters, digits or '_', not starting with a digit"
# Azure ML's spellings of a model output: a folder of ModelDirectory type whatever it holds
# (sdk/formats/custom_model.py: registered as it is, served by an entry script)
PORT_ALIASES = {"folder": AnyDirectory.name, "custom_model": ModelDirectory.name, "mlflow_model": ModelDirectory.name}
PORT_FIELDS = ("type", "label", "optional", "help", "layout")  # optional and layout: of an input only
PARAM_TYPES = {"int": Int, "float": Float, "bool": Bool, "choice": Choice, "string": Text}
# Azure ML's names of the same types
PARAM_ALIASES = {"integer": "int", "number": "float", "boolean": "bool", "str": "string"}
_RANGE = ("min", "max", "min_exclusive", "max_exclusive")
PARAM_FIELDS = {"int": _RANGE, "float": _RANGE, "bool": (), "choice": ("choices",), "string": ("multiline",)}
IMPLIED_DEFAULTS = {"bool": False, "string": ""}


class ComponentError(ValueError):
    """A component file refused: `.file`, `.field` (such as "params.lr.default"), `.reason`;
    `.problems`: every (field, reason) found, the first one being `.field` and `.reason`."""

    def __init__(self, file, field: str, reason: str, more: tuple = ()):
        self.file, self.field, self.reason = str(file), field, reason
        self.problems = [(field, reason), *more]
        super().__init__(str(self))

    def __str__(self) -> str:
        return "\n".join(f"{self.file}: {f}: {r}" for f, r in self.problems)

    def __reduce__(self):  # crosses process boundaries (a Celery result) intact
        return type(self), (self.file, self.field, self.reason, tuple(self.problems[1:]))


class Problems:
    """The problems of one file, in the order found."""

    def __init__(self, file):
        self.file = file
        self.items: list[tuple[str, str]] = []
        # a field's path as its file spells it, where that differs (an Azure ML v2 file: kind is its name)
        self.renames: dict[str, str] = {}
        self.names, self.name_rule = NAME_PATTERN, NAME_RULE  # of ports and parameters (V2_NAME_PATTERN: a v2 file's)

    def add(self, field: str, reason: str) -> None:
        for ours, theirs in self.renames.items():
            if field == ours or field.startswith(ours + "."):
                field = theirs + field[len(ours):]
                break
        self.items.append((field, reason))

    def raise_any(self) -> None:
        if self.items:
            raise ComponentError(self.file, *self.items[0], more=tuple(self.items[1:]))


def text_field(problems: Problems, data: dict, name: str, default: str, where: str = "") -> str:
    value = data.get(name)
    if value is None:
        return default
    if not isinstance(value, str):
        problems.add(f"{where}.{name}" if where else name, f"expected text, got {short(value)}")
        return default
    return value


def _mapping(problems: Problems, data: dict, group: str) -> dict:
    value = data.get(group)
    if value is None:
        return {}
    if not isinstance(value, dict):
        problems.add(group, f"expected a mapping of names to declarations, got {short(value)}"[:200])
        return {}
    return value


def _good_name(problems: Problems, group: str, name) -> bool:
    if isinstance(name, str) and problems.names.fullmatch(name):
        return True
    problems.add(f"{group}.{name}", f"{short(name)} is not a name: {problems.name_rule}")
    return False


def _label(problems: Problems, where: str, decl: dict, name: str) -> str:
    value = decl.get("label")
    if value is None:
        return name.replace("_", " ").strip().title() or name
    if not isinstance(value, str) or not value.strip():
        problems.add(f"{where}.label", f"expected a non-empty text, got {short(value)}")
        return name
    return value.strip()


def _unknown_fields(problems: Problems, where: str, decl: dict, allowed, what: str) -> None:
    for key in decl:
        if key not in allowed:
            problems.add(f"{where}.{key}", f"unknown field of {what} (its fields: {', '.join(allowed)})")


def parse_ports(problems: Problems, data: dict, group: str, may_be_optional: bool) -> list[Port]:
    """inputs or outputs: `name: {type, label, optional, help}`, or `name: <port type>`."""
    ports = []
    for name, decl in _mapping(problems, data, group).items():
        where = f"{group}.{name}"
        if not _good_name(problems, group, name):
            continue
        if isinstance(decl, str):
            decl = {"type": decl}
        if not isinstance(decl, dict):
            problems.add(where, f"expected a port type or a mapping {{type: ..., label: ...}}, got {short(decl)}")
            continue
        allowed = PORT_FIELDS if may_be_optional else tuple(f for f in PORT_FIELDS if f not in ("optional", "layout"))
        _unknown_fields(problems, where, decl, allowed, "an input" if may_be_optional else "an output")
        port_type = decl.get("type")
        port_type = PORT_ALIASES.get(port_type, port_type) if isinstance(port_type, str) else port_type
        if port_type not in PORT_TYPES:
            known = ", ".join([*PORT_TYPES, *PORT_ALIASES])
            reason = "missing" if port_type is None else f"unknown port type {short(decl.get('type'))}"
            problems.add(f"{where}.type", f"{reason} (the port types: {known})")
            continue
        optional = decl.get("optional", False)
        if not isinstance(optional, bool):
            problems.add(f"{where}.optional", f"expected true or false, got {short(optional)}")
            optional = False
        ports.append(Port(_label(problems, where, decl, name), PORT_TYPES[port_type], optional, name=name,
                          help=text_field(problems, decl, "help", "", where).strip()))
    return ports


def declared_as(data: dict, group: str, ports: list[Port], type_name: str) -> tuple[str, ...]:
    """The ports of `group` whose file declared them with the type name `type_name` as written
    (an alias such as mlflow_model, which PORT_ALIASES turns into the port type)."""
    raw = data.get(group)
    if not isinstance(raw, dict):
        return ()
    spelled = {name: decl if isinstance(decl, str) else decl.get("type") if isinstance(decl, dict) else None
               for name, decl in raw.items()}
    return tuple(p.name for p in ports if spelled.get(p.name) == type_name)


def parse_image_folders(problems: Problems, data: dict, inputs: list[Port]) -> tuple[str, ...]:
    """The inputs declared `layout: image_folder` (an ImageDirectory given as `<class>/<image>` links)."""
    found = []
    raw = data.get("inputs")
    for port in inputs:
        decl = raw.get(port.name) if isinstance(raw, dict) else None
        layout = decl.get("layout") if isinstance(decl, dict) else None
        if layout is None:
            continue
        if layout != "image_folder":
            problems.add(f"inputs.{port.name}.layout", f"{short(layout)} is not a layout: the one layout is image_folder "
                                                       f"(the images as <folder>/<class>/<image> links)")
        elif port.type.name != "ImageDirectory":
            problems.add(f"inputs.{port.name}.layout", f"image_folder lays out the images of an ImageDirectory input, "
                                                       f"not of a {port.type.name}")
        else:
            found.append(port.name)
    return tuple(found)


def parse_params(problems: Problems, data: dict, may_lack_default: bool = False) -> list[Param]:
    """params: `name: {type: int|float|bool|choice|string, default, label, help, optional, ...}`.
    `may_lack_default` (an Azure ML v2 file's scalar inputs): a parameter with no default has no
    value until one is given (the node's problem until then)."""
    params = []
    for name, decl in _mapping(problems, data, "params").items():
        where = f"params.{name}"
        if not _good_name(problems, "params", name):
            continue
        if not isinstance(decl, dict):
            problems.add(where, f"expected a mapping {{type: ..., default: ...}}, got {short(decl)}")
            continue
        param = _param(problems, where, name, decl, may_lack_default)
        if param is not None:
            params.append(param)
    return params


def _param(problems: Problems, where: str, name: str, decl: dict, may_lack_default: bool = False) -> Param | None:
    kind = decl.get("type")
    kind = PARAM_ALIASES.get(kind, kind) if isinstance(kind, str) else kind
    if kind not in PARAM_TYPES:
        reason = "missing" if kind is None else f"unknown parameter type {short(decl.get('type'))}"
        problems.add(f"{where}.type", f"{reason} (one of: {', '.join(PARAM_TYPES)})")
        return None
    # `optional`: an Azure ML v2 file's scalar input's (sdk/azure_component.py), not the designer's own files'
    v2_only = ("optional",) if may_lack_default else ()
    _unknown_fields(problems, where, decl, ("type", "label", "default", "help", *v2_only, *PARAM_FIELDS[kind]),
                    f"{'an' if kind[0] in 'aeiou' else 'a'} {kind} parameter")
    optional = decl.get("optional", False)
    if not isinstance(optional, bool):
        problems.add(f"{where}.optional", f"expected true or false, got {short(optional)}")
        optional = False
    fields: dict[str, Any] = {"label": _label(problems, where, decl, name), "name": name,
                              "help": text_field(problems, decl, "help", "", where).strip()}
    if kind in ("int", "float"):
        fields.update(_range(problems, where, decl, kind))
    elif kind == "choice":
        fields["choices"] = _choices(problems, where, decl)
    elif kind == "string":
        fields["multiline"] = decl.get("multiline", False) is True
    default = decl.get("default", None if optional else IMPLIED_DEFAULTS.get(kind))
    if kind == "choice" and "default" not in decl and not optional:
        default = fields["choices"][0] if fields["choices"] else None
    if default is None and not (optional or may_lack_default):
        problems.add(f"{where}.default", f"missing: {'an' if kind[0] in 'aeiou' else 'a'} {kind} parameter needs a default value")
        return None
    param = (OPTIONAL_TYPES if optional else PARAM_TYPES)[kind](default=_number(default) if kind == "float" else default,
                                                                **fields)
    error = None if default is None else param.check(param.default)
    if error:
        problems.add(f"{where}.default", error)
    else:
        param.default = param.normalise(param.default)
    return param


class _MayBeEmpty:
    """A parameter declared `optional: true` (an Azure ML v2 file's optional scalar input): it may have
    no value (None), which drops the command's $[[...]] group that names it."""

    may_be_empty = True  # (sdk/param_schema.py: its value may be null)

    def check(self, value):
        return None if value is None else super().check(value)  # type: ignore[misc]

    def describe(self) -> dict:
        return {**super().describe(), "optional": True}  # type: ignore[misc]


@dataclass
class OptionalInt(_MayBeEmpty, Int):
    pass


@dataclass
class OptionalFloat(_MayBeEmpty, Float):
    pass


@dataclass
class OptionalBool(_MayBeEmpty, Bool):
    pass


@dataclass
class OptionalChoice(_MayBeEmpty, Choice):
    pass


@dataclass
class OptionalText(_MayBeEmpty, Text):
    def normalise(self, value):
        return None if value == "" else value  # the pane's emptied box: no value, as for a number


OPTIONAL_TYPES = {"int": OptionalInt, "float": OptionalFloat, "bool": OptionalBool, "choice": OptionalChoice,
                  "string": OptionalText}


def may_be_empty(param) -> bool:
    return getattr(param, "may_be_empty", False) is True


def _number(value):
    """A number as PyYAML reads it: `1e-3` (no dot) is a string to YAML 1.1, but a float here."""
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return value
        return number if math.isfinite(number) else value
    return value


def _range(problems: Problems, where: str, decl: dict, kind: str) -> dict:
    bounds = {}
    for bound in ("min", "max"):
        value = _number(decl.get(bound))
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                  or not math.isfinite(value)):
            problems.add(f"{where}.{bound}", f"expected a finite number, got {short(decl.get(bound))}")
            value = None
        bounds[bound] = value
    for flag in ("min_exclusive", "max_exclusive"):
        value = decl.get(flag, False)
        if not isinstance(value, bool):
            problems.add(f"{where}.{flag}", f"expected true or false, got {short(value)}")
            value = False
        bounds[flag] = value
    lo, hi = bounds["min"], bounds["max"]
    if lo is not None and hi is not None and (lo > hi or (lo == hi and (bounds["min_exclusive"] or bounds["max_exclusive"]))):
        problems.add(f"{where}.max", f"the range is empty: min {lo} and max {hi}")
    return bounds


def _choices(problems: Problems, where: str, decl: dict) -> tuple:
    value = decl.get("choices")
    if not isinstance(value, list) or not value:
        problems.add(f"{where}.choices", f"expected a non-empty list of values, got {short(value)}")
        return ()
    if not all(isinstance(c, (str, int, float)) and not isinstance(c, bool) for c in value):
        problems.add(f"{where}.choices", f"each choice is a text or a number, got {short(value)}")
        return ()
    if len(set(value)) != len(value):
        problems.add(f"{where}.choices", f"a choice is listed twice: {short(value)}")
    return tuple(value)
