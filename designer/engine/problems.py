"""A problem of a pipeline document, and the error that carries every problem found.

Its own file so that graph.py (which validates a document) and parameters.py (which checks
pipeline parameters and resolves them for a run) both use it without importing each other.
A problem's text names its node by its module's label once `labelled()` has seen the document.
"""
from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Problem:
    message: str
    code: str = "invalid"
    node: str | None = None
    port: str | None = None
    param: str | None = None  # a module parameter (of `node`)
    link: str | None = None
    # a pipeline parameter (parameters.py): the message names it, so the text adds no 'where' for it
    pipeline_parameter: str | None = None
    # how the text names `node` to a person: its module's label, "ResNet (n5)" where two nodes
    # share it (labelled); the id when unknown
    node_label: str | None = None
    # how the text names `port`: its label ("Image transformation"), once labelled() found it
    port_label: str | None = None
    # one-click ways out, each {"label": ..., "parameters": {name: value}} for `node` (a preflight's)
    fixes: tuple | None = None

    def __str__(self) -> str:
        where, message = [], self.message
        if self.node is not None:
            where.append(self.node_label or f"node {self.node!r}")
        if self.link is not None and self.port_label is None:  # a link's id says nothing its ports do not
            where.append(f"link {self.link!r}")
        port = self.port_label or self.port
        if port is not None and f"{port!r}" not in message:  # "required input 'Dataset' ..." names it already
            where.append(f"port {port!r}")
        if self.param is not None:
            where.append(f"parameter {self.param!r}")
        if self.node_label:  # "Toy source, parameter 'sleep': Sleep: ...", not "...: Toy source: Sleep: ..."
            for said in (self.node_label, self.node_label.rsplit(" (", 1)[0]):
                message = message.removeprefix(f"{said}: ")
        return f"{', '.join(where)}: {message}" if where else message

    def as_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v is not None} | {"text": str(self)}


class PipelineInvalid(ValueError):
    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


# problems about a node's id itself: their text names the node by that id
ID_PROBLEMS = ("bad_id", "duplicate_id")


def node_names(doc: dict, catalogue) -> dict[str, str]:
    """{node id: how a message names it}: its module's label (installed modules only), with
    the id in brackets where two nodes share that label: "ResNet", "Train PyTorch Model (n5)".
    A malformed document (a schema problem) names the nodes it can."""
    labels: dict[str, str] = {}
    seen: Counter[str] = Counter()
    for node in doc.get("nodes", []) if isinstance(doc, dict) and isinstance(doc.get("nodes"), list) else []:
        if isinstance(node, dict) and isinstance(node.get("id"), str) and isinstance(node.get("kind"), str):
            try:
                module = catalogue.for_node(node) if catalogue is not None else None
            except TypeError:  # a version of the wrong type: a schema problem
                module = None
            seen[node["id"]] += 1
            if module is not None:  # a kind not installed: named by id (its problem names the kind)
                labels[node["id"]] = module.label
    shared = Counter(labels.values())
    # an id two nodes have is named as an id: that is what its problem is about
    return {nid: f"{label} ({nid})" if shared[label] > 1 else label for nid, label in labels.items() if seen[nid] == 1}


def labelled(problems: list[Problem], doc: dict, catalogue) -> list[Problem]:
    """The problems with the node each one is about named by label (node_names) in its text; the
    `node` field keeps the id (the page marks that node)."""
    names = node_names(doc, catalogue) if any(p.node is not None for p in problems) else {}
    named = [dataclasses.replace(p, node_label=names[p.node]) if p.node in names and p.code not in ID_PROBLEMS else p
             for p in problems]
    return [_port_labelled(p, doc, catalogue) if p.port is not None and p.node in names else p for p in named]


def _port_labelled(problem: Problem, doc: dict, catalogue) -> Problem:
    """The problem with its port named by label, where its node's module declares that port."""
    node = next((n for n in doc.get("nodes", []) if isinstance(n, dict) and n.get("id") == problem.node), None)
    try:
        module = catalogue.for_node(node) if node is not None else None
    except TypeError:
        module = None
    port = module and (module.input(problem.port) or module.output(problem.port))
    return dataclasses.replace(problem, port_label=port.label) if port else problem
