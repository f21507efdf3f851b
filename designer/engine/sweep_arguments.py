"""A sweep over a component's script arguments, named as HyperDrive's sweep files name them:

    parameter_space:
      - {name: --learning_rate, expression: loguniform, values: [-6, -1]}

A name that starts with `-` is a script argument. Every component node whose command passes it a
parameter (`--learning_rate {params.learning_rate}`, or `--learning_rate={params.learning_rate}`:
sdk.component.arguments) gets the swept value, however many nodes that is. `bind()` turns it into
an ordinary sweep of a pipeline parameter: it declares one for the argument (named after it,
`learning_rate`, or `learning_rate_2` when that name is taken; typed and ranged from the
component's parameter, so that sweep_config's type and range checks apply; its default the node's
value) and binds the nodes' parameter to it. A node whose parameter is already bound keeps its
binding: the argument drives that pipeline parameter. The sweep keeps the name the user wrote (its
trials, page and best show `--learning_rate`); `bind()` on the pipeline the sweep stored finds the
same parameter again for each trial. `apply()` writes a trial's argument values into a pipeline
(Apply best values): into each node's parameter, or the default of the pipeline parameter it binds.

Plain Python: imports neither Django nor torch.
"""
from __future__ import annotations

import copy
import difflib
import math
import re
from dataclasses import dataclass, field
from typing import Any

from designer.engine import parameters
from designer.engine.problems import Problem, node_names
from designer.engine.sweep_checks import SweepProblem
from sdk.component import arguments
from sdk.yamltext import short

# a component parameter's type -> the pipeline parameter type that binds it (parameters.BINDS)
TYPES = {"int": "int", "float": "float", "bool": "bool", "choice": "string", "str": "string"}
SHOWN = 8  # arguments (and nodes) a message lists before "..."


def is_argument(name) -> bool:
    """A parameter_space name that is a script argument (`--learning_rate`, `-lr`)."""
    return isinstance(name, str) and name.startswith("-")


def named(raw) -> list[tuple[int, str]]:
    """(index, argument) of each parameter_space item of a configuration (as written, or as
    stored) that names a script argument; none when it has no such list (check() says why)."""
    space = raw.get("parameter_space") if isinstance(raw, dict) else None
    if not isinstance(space, list):
        return []
    return [(i, e["name"]) for i, e in enumerate(space) if isinstance(e, dict) and is_argument(e.get("name"))]


@dataclass
class Bound:
    doc: dict  # the pipeline, each argument's nodes bound to its pipeline parameter
    names: dict[str, str] = field(default_factory=dict)  # argument -> the pipeline parameter it drives
    problems: list[Problem] = field(default_factory=list)

    def declarations(self) -> list[dict]:
        """The pipeline's parameter declarations, then each argument's: its parameter's under the
        argument's name (what sweep_config.check() and tuning.ask() read a swept name's type from)."""
        declared = parameters.declarations(self.doc)
        return [*self.doc.get("parameters", []), *({**declared[p], "name": a} for a, p in self.names.items())]

    def values(self, values: dict) -> dict:
        """A trial's values for a run: each argument's as its pipeline parameter's."""
        return {self.names.get(k, k): v for k, v in values.items()}

    def merged(self, problems: list) -> list:
        """sweep_config's problems with this binding's: the reason an argument is not found
        replaces "unknown pipeline parameter" for its item."""
        mine = {p.field: p for p in self.problems if isinstance(p, SweepProblem)}
        out = [mine.pop(p.field) if p.code == "unknown_parameter" and getattr(p, "field", None) in mine else p
               for p in problems]
        return out + list(mine.values())


def bind(doc: dict, raw, catalogue, lines: dict[int, int] | None = None) -> Bound:
    """The pipeline with each script argument the configuration `raw` sweeps bound to a pipeline
    parameter (a copy; `doc` itself when it sweeps none). `lines`: {item index: line} of a
    configuration read from text, for the problems to say where they are."""
    swept = named(raw)
    if not swept:
        return Bound(doc)
    doc = copy.deepcopy(doc)
    bound = Bound(doc)
    passing = _passing(doc, catalogue)
    names = node_names(doc, catalogue)
    plain = {e["name"] for e in raw["parameter_space"] if isinstance(e, dict) and isinstance(e.get("name"), str)}
    driven: dict[str, str] = {}  # pipeline parameter -> the argument that drives it
    for i, argument in swept:
        if argument in bound.names:
            continue  # swept twice: sweep_config names it
        where = f"parameter_space[{i}] ({_shown(argument)})" + (f" (line {lines[i]})" if lines and i in lines else "")

        def refuse(message: str, code: str, i=i, argument=argument, where=where) -> None:
            bound.problems.append(SweepProblem(f"{where}: {message}", code, param=argument, field=f"parameter_space[{i}]"))

        hits = [(node, module.param(p)) for node, module, passed in passing if (p := passed.get(argument))]
        hits = [(node, param) for node, param in hits if param is not None]
        if not hits:
            refuse(_not_passed(argument, passing, names), "unknown_argument")
            continue
        name, why = _parameter(argument, hits, doc, names)
        if name is None:
            refuse(why, "argument_conflict")
            continue
        if name in plain or name in driven:
            also = f"{driven[name]} drives it too" if name in driven else "parameter_space sweeps it too"
            refuse(f"{_shown(argument)} is pipeline parameter {short(name)}'s value, and {also}: sweep it once",
                   "duplicate_parameter")
            continue
        for node, param in hits:
            node.setdefault("bindings", {}).setdefault(param.name, name)
        driven[name], bound.names[argument] = argument, name
    return bound


def apply(doc: dict, values: dict, catalogue) -> dict:
    """Write the values of script arguments among `values` (a trial's) into `doc`, in place: into
    the parameter of each node passing one, or, where a node binds that parameter, as the value of
    its pipeline parameter. Returns the values of pipeline parameters (the others and those)."""
    rest = {k: v for k, v in values.items() if not is_argument(k)}
    passing = _passing(doc, catalogue) if len(rest) < len(values) else []
    for argument, value in values.items():
        for node, module, passed in passing if is_argument(argument) else ():
            param = module.param(passed[argument]) if argument in passed else None
            if param is None:
                continue
            if node.get("bindings", {}).get(param.name):
                rest[node["bindings"][param.name]] = value
            else:
                node.setdefault("parameters", {})[param.name] = param.normalise(value)
    return rest


def _passing(doc: dict, catalogue) -> list[tuple[dict, Any, dict[str, str]]]:
    """(node, module, {argument: parameter}) of each component node of the document."""
    found = []
    for node in doc.get("nodes", []):
        module = catalogue.for_node(node)
        spec = getattr(module, "component", None)
        if spec is not None:
            found.append((node, module, arguments(spec)))
    return found


def _shown(text: str) -> str:
    """A name the user wrote, as a message shows it (at most 80 characters)."""
    return text if len(text) <= 80 else text[:77] + "..."


def _listed(items: list[str]) -> str:
    return ", ".join(items[:SHOWN]) + (", ..." if len(items) > SHOWN else "")


def _not_passed(argument: str, passing: list, names: dict[str, str]) -> str:
    offered = [(names.get(node["id"], node["id"]), list(passed)) for node, _, passed in passing if passed]
    said = f"no component node of this pipeline passes {short(argument)} a parameter"
    if not offered:
        return (f"{said}: none of its nodes is a component whose command passes a script argument a parameter "
                "(--flag {params.name}); sweep a pipeline parameter instead")
    close = difflib.get_close_matches(argument[:80], sorted({a for _, passed in offered for a in passed}), n=1)
    hint = f"did you mean {close[0]}? " if close else ""
    listed = "; ".join(f"{label}: {_listed(passed)}" for label, passed in offered[:SHOWN])
    return f"{said} ({hint}the arguments its components take: {listed}{'; ...' if len(offered) > SHOWN else ''})"


def _parameter(argument: str, hits: list, doc: dict, names: dict[str, str]) -> tuple[str | None, str]:
    """The pipeline parameter the argument drives (a node's binding, else a new one declared in
    `doc`), or None and why there is none."""
    def label(node) -> str:
        return names.get(node["id"], node["id"])

    bound = {node["id"]: node.get("bindings", {}).get(param.name) for node, param in hits}
    existing = sorted({p for p in bound.values() if p})
    if len(existing) > 1:
        nodes = [f"{label(node)} (bound to {short(bound[node['id']])})" for node, _ in hits if bound[node["id"]]]
        return None, (f"the nodes passing it bind it to different pipeline parameters ({_listed(nodes)}): one "
                      f"value cannot be both; bind them to one and sweep it")
    if existing:
        return existing[0], ""
    declaration = _declaration(hits)
    if isinstance(declaration, str):
        return None, declaration
    taken = set(parameters.declarations(doc))
    base = re.sub(r"\W", "_", argument.lstrip("-"), flags=re.ASCII)[:60]
    base = f"_{base[:59]}" if not base or base[0].isdigit() else base
    name = next(n for n in (base, *(f"{base}_{k}" for k in range(2, len(taken) + 3))) if n not in taken)
    doc.setdefault("parameters", []).append({**declaration, "name": name, "help": f"the script argument {_shown(argument)}"})
    return name, ""


def _declaration(hits: list) -> dict | str:
    """A pipeline parameter declaration every node's parameter accepts (its type, the ranges'
    overlap, the first node's value as its default), or why there is none."""
    kinds = {TYPES.get(param.type) for _, param in hits}
    kind = "int" if kinds == {"int", "float"} else kinds.pop() if len(kinds) == 1 else None
    if kind is None or kind not in parameters.TYPES:
        types = sorted({param.type for _, param in hits})
        return f"it is passed parameters of types {', '.join(types)}: one value cannot be all of them"
    node, first = hits[0]
    declaration: dict = {"type": kind, "default": node.get("parameters", {}).get(first.name, first.default)}
    if kind in ("int", "float"):
        lows = [_bound(p.min, p.min_exclusive, kind, +1) for _, p in hits if getattr(p, "min", None) is not None]
        highs = [_bound(p.max, p.max_exclusive, kind, -1) for _, p in hits if getattr(p, "max", None) is not None]
        declaration |= ({"min": max(lows)} if lows else {}) | ({"max": min(highs)} if highs else {})
        if lows and highs and max(lows) > min(highs):
            return "the ranges of the parameters it is passed do not overlap: no value fits them all"
    return declaration


def _bound(value: float, exclusive: bool, kind: str, side: int) -> float:
    """A component parameter's min (side +1) or max (-1) as a pipeline parameter's inclusive one:
    an exclusive 0 of a float is the next float above 0; an int's bound a whole number inside."""
    if kind == "int":
        whole = math.ceil(value) if side > 0 else math.floor(value)
        return whole + side if exclusive and whole == value else whole
    return math.nextafter(value, side * math.inf) if exclusive else value
