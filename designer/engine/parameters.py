"""Pipeline parameters: declared at the top of a document, bound to module parameters of nodes.

    "parameters": [{"name": "lr", "type": "float", "default": 0.001, "min": 1e-06, "max": 1.0, "help": ""}]
    node: "bindings": {"learning_rate": "lr"}     # module parameter -> pipeline parameter

`problems()` checks the declarations and every binding (graph.validate() includes them);
`resolve()` turns a document and the values given at submit into what a run executes: every
bound module parameter replaced by its value, the values frozen in "parameter_values".
A pipeline parameter's type says which module parameters (sdk.declarations) it may bind:

    int -> Int or Float     float -> Float     bool -> Bool     string -> Choice or Text

Plain Python: imports neither Django nor torch.
"""
from __future__ import annotations

import copy
import math
import re
from collections.abc import Iterable, Iterator
from typing import Any

from designer.engine.problems import PipelineInvalid, Problem, labelled
from sdk.declarations import Bool, Float, Int, Module, Param, Text

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
NAME_RULE = "a letter or _, then letters, digits or _ (64 characters at most)"
TYPES = ("int", "float", "bool", "string")
# the module parameter types (Param.type) a pipeline parameter of each type may bind
BINDS = {"int": ("int", "float"), "float": ("float",), "bool": ("bool",), "string": ("choice", "str")}
_BINDS_TEXT = {"int": "Int or Float", "float": "Float", "bool": "Bool", "string": "Choice or Text"}
_PARAM_CLASS = {"int": Int, "float": Float, "bool": Bool, "string": Text}
_TRUE, _FALSE = ("true", "yes", "on", "1"), ("false", "no", "off", "0")


# --------------------------------------------------------------------------- reading a document


def declarations(doc: dict) -> dict[str, dict]:
    """{name: declaration} of a document's pipeline parameters (the first of a duplicated name)."""
    found: dict[str, dict] = {}
    for d in doc.get("parameters", []):
        found.setdefault(d["name"], d)
    return found


def defaults(doc: dict) -> dict:
    return {name: d["default"] for name, d in declarations(doc).items()}


def as_param(declaration: dict) -> Param:
    """The declaration as an sdk Param: `check(value)` says why a value is of the wrong type or
    outside [min, max] (None when fine), `normalise(value)` gives the value a run uses."""
    cls = _PARAM_CLASS[declaration["type"]]
    extra = {k: declaration[k] for k in ("min", "max") if k in declaration and cls in (Int, Float)}
    return cls(declaration["name"], default=declaration.get("default"), help=declaration.get("help", ""),
               name=declaration["name"], **extra)


def _type_error(type_: str, value) -> str | None:
    """Why `value` is no value of a pipeline parameter of this type (range aside), or None."""
    return _PARAM_CLASS[type_]("value").check(value)


def _bindings(doc: dict, catalogue) -> Iterator[tuple[str, type[Module], str, str]]:
    """(node id, module, module parameter name, pipeline parameter name) of every binding of a
    node whose module is installed (an unknown kind is graph.validate()'s problem)."""
    for node in doc["nodes"]:
        module = catalogue.for_node(node)
        if module is None:
            continue
        for module_param, name in node.get("bindings", {}).items():
            yield node["id"], module, module_param, name


# --------------------------------------------------------------------------- problems


def problems(doc: dict, catalogue) -> list[Problem]:
    """Every problem of the pipeline parameters' declarations and of the nodes' bindings, each
    naming the pipeline parameter (and the node and module parameter of a binding)."""
    found = _declaration_problems(doc.get("parameters", []))
    declared = declarations(doc)
    for nid, module, module_param, name in _bindings(doc, catalogue):
        found += _binding_problems(nid, module, module_param, name, declared)
    return found


def _declaration_problems(decls: list[dict]) -> list[Problem]:
    found, seen = [], set()
    for d in decls:
        name, type_ = d["name"], d["type"]

        def bad(message: str, name=name):
            found.append(Problem(f"pipeline parameter {name!r}: {message}", "bad_parameter", pipeline_parameter=name))

        if not NAME.fullmatch(name):
            bad(f"{name!r} cannot be a name: a name is {NAME_RULE}")
        if name in seen:
            found.append(Problem(f"two pipeline parameters are named {name!r}", "bad_parameter", pipeline_parameter=name))
        seen.add(name)
        if type_ not in TYPES:
            bad(f"type {type_!r} is not one of: {', '.join(TYPES)}")
            continue
        ranged = type_ in ("int", "float")
        for key in ("min", "max"):
            if key in d and not ranged:
                bad(f"a {type_} parameter has no {key}: min and max are for int and float parameters")
        if ranged and "min" in d and "max" in d and d["min"] > d["max"]:
            bad(f"its min {d['min']!r} is greater than its max {d['max']!r}")
            ranged = False  # no range to check the default against
        error = _type_error(type_, d["default"])
        if error:
            bad(f"its default ({type_}): {error}")
        elif ranged and (error := as_param(d).check(d["default"])):
            bad(f"its default {error}")
    return found


def _binding_problems(nid: str, module, module_param: str, name: str, declared: dict) -> list[Problem]:
    found = []
    where: dict[str, Any] = {"node": nid, "param": module_param, "pipeline_parameter": name}
    param = module.param(module_param)
    if param is None:
        known = ", ".join(p.name for p in module.params) or "none"
        found.append(Problem(f"{module.label} has no parameter {module_param!r} to bind to pipeline parameter "
                             f"{name!r} (its parameters: {known})", "unknown_param", **where))
    decl = declared.get(name)
    if decl is None:
        known = ", ".join(declared) or "none"
        label = f"{module.label}: {param.label}" if param else module.label
        found.append(Problem(f"{label} is bound to pipeline parameter {name!r}, which this pipeline does not declare "
                             f"(its parameters: {known})", "unknown_parameter", **where))
    if param is None or decl is None or decl["type"] not in TYPES:
        return found
    if param.type not in BINDS[decl["type"]]:
        found.append(Problem(
            f"{module.label}: {param.label} is a {param.type} parameter: it cannot be bound to pipeline parameter "
            f"{name!r} of type {decl['type']} (a {decl['type']} pipeline parameter binds "
            f"{_BINDS_TEXT[decl['type']]} module parameters)", "type_mismatch", **where))
        return found
    for key in ("default", "min", "max"):
        if key in decl and not _type_error(decl["type"], decl[key]):
            error = _bound_error(module, param, name, f"its {key}", decl[key])
            if error:
                found.append(Problem(error, "out_of_range", **where))
    return found


def _bound_error(module, param: Param, name: str, what: str, value) -> str | None:
    """'Train PyTorch Model: Learning rate is bound to pipeline parameter 'lr': its default 0 is
    out of range: must be > 0', or None when the module parameter accepts `value`."""
    error = param.check(value)
    if error is None:
        return None
    said = error if error.startswith(repr(value)) else f"{value!r}: {error}"
    return f"{module.label}: {param.label} is bound to pipeline parameter {name!r}: {what} {said}"


# --------------------------------------------------------------------------- a run's values


def resolve(doc: dict, values: dict | None, catalogue) -> dict:
    """A deep copy of `doc` for a run with these values of its pipeline parameters (a missing one
    takes its default): every bound module parameter replaced by its value (the bindings stay, to
    show them) and the values frozen in "parameter_values". Raises graph.PipelineInvalid naming
    every problem: of the declarations and bindings, and of each value (an unknown name, a wrong
    type, outside the declared range or the range of a module parameter bound to it), each node
    named by its module's label."""
    found = problems(doc, catalogue)
    if found:
        raise PipelineInvalid(labelled(found, doc, catalogue))
    values = {} if values is None else values
    if not isinstance(values, dict):
        raise PipelineInvalid([Problem(f"the values of the pipeline parameters must be an object "
                                       f"{{name: value}}, got {values!r}", "bad_value")])
    declared = declarations(doc)
    known = ", ".join(declared) or "none"
    found = [Problem(f"there is no pipeline parameter {name!r} (this pipeline's parameters: {known})",
                     "unknown_parameter", pipeline_parameter=str(name)) for name in values if name not in declared]
    frozen = {}
    for name, decl in declared.items():
        value = values.get(name, decl["default"])
        value_problems = _value_problems(doc, decl, value, catalogue)
        found += value_problems
        if not value_problems:
            frozen[name] = as_param(decl).normalise(value)
    if found:
        raise PipelineInvalid(labelled(found, doc, catalogue))
    run = copy.deepcopy(doc)
    run["parameter_values"] = frozen
    for node in run["nodes"]:
        module = catalogue.for_node(node)
        for module_param, name in node.get("bindings", {}).items():
            param = module.param(module_param) if module else None  # an unknown kind: the run says so
            node.setdefault("parameters", {})[module_param] = param.normalise(frozen[name]) if param else frozen[name]
    return run


def _value_problems(doc: dict, decl: dict, value, catalogue) -> list[Problem]:
    name, type_ = decl["name"], decl["type"]
    error = _type_error(type_, value)
    if error:
        return [Problem(f"pipeline parameter {name!r} ({type_}): {error}", "bad_value", pipeline_parameter=name)]
    error = as_param(decl).check(value)
    if error:
        return [Problem(f"pipeline parameter {name!r}: {error}", "out_of_range", pipeline_parameter=name)]
    found = []
    for nid, module, module_param, bound in _bindings(doc, catalogue):
        param = module.param(module_param)
        if bound == name and param is not None:  # a binding to no parameter is problems()'s, checked first
            error = _bound_error(module, param, name, "its value", value)
            if error:
                found.append(Problem(error, "out_of_range", node=nid, param=module_param, pipeline_parameter=name))
    return found


def coerce(declaration: dict, raw_text: str):
    """A value typed on a command line (`--param lr=0.01`) as the declared type; ValueError
    naming the parameter and its type when the text is no such value. The range is resolve()'s."""
    name, type_, text = declaration.get("name"), declaration.get("type"), raw_text.strip()
    if type_ == "string":
        return raw_text
    if type_ == "bool":
        if text.lower() in _TRUE + _FALSE:
            return text.lower() in _TRUE
        raise ValueError(f"pipeline parameter {name!r} is a bool: {raw_text!r} is not true or false "
                         "(write true or false, yes or no, 1 or 0)")
    if type_ in ("int", "float"):
        try:
            number = float(text)
        except ValueError:
            number = math.nan
        if type_ == "int" and re.fullmatch(r"[+-]?\d+", text):
            return int(text)  # exactly, also past 2**53
        if math.isfinite(number) and (type_ == "float" or number == int(number)):
            return number if type_ == "float" else int(number)
        what = "a whole number" if type_ == "int" else "a finite number"
        raise ValueError(f"pipeline parameter {name!r} is {'an' if type_ == 'int' else 'a'} {type_}: "
                         f"{raw_text!r} is not {what}")
    raise ValueError(f"pipeline parameter {name!r} has type {type_!r}, not one of: {', '.join(TYPES)}")


# --------------------------------------------------------------------------- sweeps


def metrics(doc: dict, catalogue) -> set[str]:
    """The metric names the document's modules emit (what a sweep may optimise)."""
    found: set[str] = set()
    for node in doc["nodes"]:
        module = catalogue.for_node(node)
        if module is not None:
            found.update(getattr(module, "metrics", ()))
    return found


def dependent_nodes(doc: dict, names: Iterable[str]) -> set[str]:
    """The nodes bound to any of these pipeline parameters and every node downstream of them:
    the rest of the pipeline is the same in every trial of a sweep over these parameters."""
    names = set(names)
    downstream: dict[str, set[str]] = {}
    for link in doc["links"]:
        downstream.setdefault(link["from"]["node"], set()).add(link["to"]["node"])
    found = {n["id"] for n in doc["nodes"] if names & set(n.get("bindings", {}).values())}
    todo = list(found)
    while todo:
        for nxt in downstream.get(todo.pop(), ()):
            if nxt not in found:
                found.add(nxt)
                todo.append(nxt)
    return found
