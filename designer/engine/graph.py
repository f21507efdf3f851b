"""Parse and validate a pipeline document; order its DAG.

`validate()` reports every problem at once, each naming the node, port, parameter or link and
the reason, so that a user can fix a pipeline in one pass.
"""
from __future__ import annotations

import json
from functools import lru_cache
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import fastjsonschema
import jsonschema

from designer.engine import jsontext, parameters, paths, targets
from designer.engine.problems import PipelineInvalid, Problem, labelled, node_names
from designer.engine.schema_migrations import SchemaVersionError, migrate
from sdk.declarations import accepted_types, compatible, not_finite

SCHEMA_PATH = Path(__file__).with_name("pipeline.schema.json")
MAX_RUN_SETTING = 64
RUN_SETTING_LABELS = {"node_count": "Node count", "process_count_per_node": "Process count per node",
                      "timeout_seconds": "Timeout (seconds)", "compute_target": "Compute target",
                      "max_retries": "Max retries"}
MAX_TIMEOUT_SECONDS = 30 * 24 * 3600  # 0: no limit
DEFAULT_MAX_RETRIES = 2  # a node whose worker is lost runs again (from its checkpoint) this many times
MAX_RETRIES = 10


@lru_cache(maxsize=1)
def _validator():
    schema = json.loads(SCHEMA_PATH.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


# --------------------------------------------------------------------------- reading


def parse_text(text: str | bytes) -> dict:
    """JSON text -> migrated document. Raises PipelineInvalid with a readable reason."""
    try:
        doc = jsontext.loads(text)
    except jsontext.JsonTextError as e:
        raise PipelineInvalid([Problem(f"the file is {e}", "malformed_json")]) from None
    return upgrade(doc)


def upgrade(doc) -> dict:
    if not isinstance(doc, dict):
        raise PipelineInvalid([Problem("a pipeline file must be a JSON object", "malformed_json")])
    try:
        return migrate(doc)
    except SchemaVersionError as e:
        raise PipelineInvalid([Problem(str(e), "schema_version")])


@lru_cache(maxsize=1)
def _fast_validator():
    return fastjsonschema.compile(json.loads(SCHEMA_PATH.read_text()), use_default=False)


def schema_problems(doc: dict) -> list[Problem]:
    # fastjsonschema (generated code) says in 0.1 s whether a 5,000-node document is well formed,
    # where jsonschema takes seconds; only a malformed one pays for jsonschema's full report
    try:
        _fast_validator()(doc)
        return []
    except fastjsonschema.JsonSchemaException:
        pass
    problems = []
    for err in sorted(_validator().iter_errors(doc), key=lambda e: list(map(str, e.absolute_path))):
        path = list(err.absolute_path)
        node = link = None
        if len(path) >= 2 and path[0] == "nodes" and isinstance(path[1], int):
            node = _safe_id(doc["nodes"], path[1])
        if len(path) >= 2 and path[0] == "links" and isinstance(path[1], int):
            link = _safe_id(doc["links"], path[1])
        where = "/".join(map(str, path)) or "(top level)"
        if err.validator == "pattern" and path[-1:] == ["id"]:  # an id names a folder (paths.py)
            problems.append(Problem(f"{where}: {err.instance!r} cannot be an id: an id is {paths.ID_RULE}",
                                    "bad_id", node=node, link=link))
            continue
        problems.append(Problem(f"{where}: {err.message}", "schema", node=node, link=link))
    return problems


def _safe_id(items, index):
    item = items[index] if index < len(items) else None
    return str(item.get("id")) if isinstance(item, dict) and item.get("id") is not None else f"#{index}"


# --------------------------------------------------------------------------- validation


def unstorable_problems(doc: dict, catalogue=None) -> list[Problem]:
    """NaN, Infinity and numbers too large for a float (json reads 1e400 as Infinity) anywhere in
    a document of the right shape: no module can use them and PostgreSQL cannot store them. A
    parameter is named with its module and label (its node by label, problems.labelled)."""
    problems = []
    for where, value in _floats(doc, ()):
        reason = not_finite(value)
        if reason is None:
            continue
        node = doc["nodes"][where[1]] if where[:1] == ("nodes",) else None
        nid = None if node is None else str(node.get("id"))
        if node is not None and len(where) == 4 and where[2] == "parameters":
            module = catalogue.for_node(node) if catalogue is not None else None
            param = module.param(where[3]) if module is not None else None
            label = f"{module.label}: {param.label}" if module is not None and param else f"{node.get('kind')}: {where[3]}"
            problems.append(Problem(f"{label}: {reason}", "bad_value", node=nid, param=where[3]))
        elif where[:1] == ("parameters",) and len(where) == 3:
            name = str(doc["parameters"][where[1]].get("name"))
            problems.append(Problem(f"pipeline parameter {name!r}: its {where[2]}: {reason}", "bad_value",
                                    pipeline_parameter=name))
        else:
            problems.append(Problem(f"{'/'.join(map(str, where))}: {reason}", "bad_value", node=nid))
    return labelled(problems, doc, catalogue)


def _floats(value, where: tuple):
    if isinstance(value, float):
        yield where, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _floats(v, (*where, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _floats(v, (*where, i))


def validate(doc: dict, catalogue, machines=None, compute=None) -> list[Problem]:
    """All problems of a (migrated) document: schema first; semantics when the shape is right.
    Each problem's text names its node by its module's label (graph.labelled). `machines`: what
    the machines that run modules have (sdk.declarations.Machine; the web app passes the live
    workers' reports), for the modules' pre-flight checks; None: this machine. `compute`: the
    compute targets the workers joined ({name: targets.Target}); None: targets are not checked."""
    problems = schema_problems(doc) or unstorable_problems(doc, catalogue)
    if problems:
        return labelled(problems, doc, catalogue)
    return labelled(_semantic_problems(doc, catalogue, machines) + targets.problems(doc, catalogue, compute), doc, catalogue)


def _semantic_problems(doc: dict, catalogue, machines=None) -> list[Problem]:
    problems = []
    nodes: dict[str, dict] = {}
    for n in doc["nodes"]:
        if n["id"] in nodes:
            problems.append(Problem("two nodes have this id", "duplicate_id", node=n["id"]))
        nodes[n["id"]] = n
    for n in doc["nodes"]:
        problems += _node_problems(n, catalogue, machines)
    problems += _link_problems(doc, nodes, catalogue)
    problems += _cycle_problems(doc, catalogue)
    problems += parameters.problems(doc, catalogue)
    return problems


def _node_problems(node: dict, catalogue, machines=None) -> list[Problem]:
    nid = node["id"]
    module = catalogue.for_node(node)
    if module is None:
        versions = catalogue.versions(node["kind"])
        if versions:  # a pinned component version that is gone
            return [Problem(f"{node['kind']!r} version {node.get('version')} is not available (versions: "
                            f"{', '.join(map(str, versions))}): remove the node and add it again from the palette", "unknown_kind", node=nid)]
        if node["kind"] in catalogue.withheld:
            return [Problem(f"{node['kind']!r} {catalogue.withheld[node['kind']]}", "unknown_kind", node=nid)]
        return [Problem(f"unknown module kind {node['kind']!r}: no module of that kind is installed", "unknown_kind", node=nid)]
    problems = []
    for name, value in node.get("parameters", {}).items():
        param = module.param(name)
        if param is None:
            known = ", ".join(p.name for p in module.params) or "none"
            problems.append(Problem(f"{module.label} has no parameter {name!r} (its parameters: {known})", "unknown_param", node=nid, param=name))
            continue
        if value is None and param.default is None:
            continue  # null, as a file writes a value not chosen yet: the same as leaving it out
        error = param.check(value)
        if error:
            problems.append(Problem(f"{param.label}: {error}", "bad_value", node=nid, param=name))
    if not problems:
        problems += _preflight_problems(node, module, machines)
    return problems + _run_setting_problems(node, module)


def _preflight_problems(node: dict, module, machines=None) -> list[Problem]:
    """What the module knows would fail on the machines that run modules (Module.preflight), for
    values checked fine; a bound parameter takes its value at submit, so what it says of one
    waits for then."""
    bound = node.get("bindings") or {}
    found = []
    for name, reason, *fixes in module.preflight(module.resolved_params(node.get("parameters", {})), machines):
        param = module.param(name)
        if name not in bound:  # fixes: the ways out a click applies on the page
            found.append(Problem(f"{param.label if param else name}: {reason}", "preflight", node=node["id"], param=name,
                                 fixes=tuple(fixes[0]) if fixes else None))
    return found


def _run_setting_problems(node: dict, module) -> list[Problem]:
    problems, nid = [], node["id"]
    for name, value in node.get("run_settings", {}).items():
        label = RUN_SETTING_LABELS.get(name, name)
        if name == targets.KEY:
            continue  # any module may run on another target (targets.problems checks that it exists)
        if name == "max_retries":
            if not 0 <= value <= MAX_RETRIES:
                problems.append(Problem(f"{module.label}: {label} is {value}: must be between 0 (never run again) and "
                                        f"{MAX_RETRIES}", "bad_value", node=nid, param=name))
        elif name == "timeout_seconds":
            if not module.timeout_setting and value != 0:
                problems.append(Problem(f"{module.label} has no Timeout run setting: {label} must be 0", "bad_value",
                                        node=nid, param=name))
            elif not 0 <= value <= MAX_TIMEOUT_SECONDS:
                problems.append(Problem(f"{module.label}: {label} is {value}: must be between 0 (no limit) and "
                                        f"{MAX_TIMEOUT_SECONDS} (30 days)", "bad_value", node=nid, param=name))
        elif not module.distributed and value != 1:
            problems.append(Problem(f"{module.label} runs as a single process: {label} must be 1", "bad_value", node=nid, param=name))
        elif not 1 <= value <= MAX_RUN_SETTING:
            problems.append(Problem(f"{module.label}: {label} is {value}: must be between 1 and {MAX_RUN_SETTING}",
                                    "bad_value", node=nid, param=name))
    return problems


def _link_problems(doc: dict, nodes: dict, catalogue) -> list[Problem]:
    problems = []
    fed: dict[tuple[str, str], str] = {}
    link_ids = set()
    for link in doc["links"]:
        lid = link["id"]
        if lid in link_ids:
            problems.append(Problem("two links have this id", "duplicate_id", link=lid))
        link_ids.add(lid)
        src = _endpoint(link["from"], nodes, catalogue, "outputs", lid, problems)
        dst = _endpoint(link["to"], nodes, catalogue, "inputs", lid, problems)
        if src and dst and not compatible(src.type, dst.type):
            takes = " or ".join(t.words for t in accepted_types(dst.type))
            problems.append(Problem(
                f"its input {dst.label!r} takes only {takes}, and the output {src.label!r} linked to it gives {src.type.words}",
                "incompatible",
                node=link["to"]["node"], port=link["to"]["port"], link=lid))
        key = (link["to"]["node"], link["to"]["port"])
        if key in fed:
            problems.append(Problem(f"input is fed twice (links {fed[key]!r} and {lid!r})", "fed_twice", node=key[0], port=key[1], link=lid))
        fed.setdefault(key, lid)
    for nid, node in nodes.items():
        module = catalogue.for_node(node)
        for port in module.inputs if module else []:
            if not port.optional and (nid, port.name) not in fed:
                problems.append(Problem(f"required input {port.label!r} ({port.type.words}) is not connected", "missing_input", node=nid, port=port.name))
    return problems


def _endpoint(end: dict, nodes: dict, catalogue, side: str, lid: str, problems: list):
    node = nodes.get(end["node"])
    if node is None:
        problems.append(Problem(f"links to node {end['node']!r}, which does not exist", "missing_node", link=lid))
        return None
    module = catalogue.for_node(node)
    if module is None:
        return None  # already reported as an unknown kind
    port = (module.output if side == "outputs" else module.input)(end["port"])
    if port is None:
        names = ", ".join(p.name for p in getattr(module, side)) or "none"
        what = "output" if side == "outputs" else "input"
        problems.append(Problem(f"{module.label} has no {what} port {end['port']!r} (its {what}s: {names})", "missing_port", node=end["node"], port=end["port"], link=lid))
    return port


def _cycle_problems(doc: dict, catalogue) -> list[Problem]:
    try:
        topological_order(doc)
    except CycleError as e:
        cycle, names = e.args[1], node_names(doc, catalogue)
        return [Problem(f"the links form a cycle: {' -> '.join(names.get(n, n) for n in cycle)}", "cycle", node=cycle[0])]
    return []


# --------------------------------------------------------------------------- graph queries


def topological_order(doc: dict) -> list[str]:
    ts = TopologicalSorter({n["id"]: set() for n in doc["nodes"]})
    for link in doc["links"]:
        ts.add(link["to"]["node"], link["from"]["node"])
    return list(ts.static_order())


def inputs_of(doc: dict, node_id: str) -> dict[str, tuple[str, str]]:
    """{input port: (upstream node, upstream output port)}"""
    return {l["to"]["port"]: (l["from"]["node"], l["from"]["port"]) for l in doc["links"] if l["to"]["node"] == node_id}


def upstream_of(doc: dict) -> dict[str, set[str]]:
    up: dict[str, set[str]] = {n["id"]: set() for n in doc["nodes"]}
    for link in doc["links"]:
        up[link["to"]["node"]].add(link["from"]["node"])
    return up


def pin_versions(doc: dict, catalogue) -> dict:
    """Each component node without a version gets the latest one (in place; returned): a pipeline
    keeps the version it was saved or submitted with when a new one is added. A Run setting the
    node leaves unset takes its component file's (an Azure ML v2 file's distribution and resources),
    so that the snapshot says what runs."""
    nodes = doc.get("nodes")
    nodes = nodes if isinstance(nodes, list) else []  # (a wrong shape: validate() says so)
    for node in nodes:
        module = catalogue.get(node.get("kind")) if isinstance(node, dict) and "version" not in node else None
        if module is not None and module.component is not None:
            node["version"] = module.version
        pinned = (catalogue.for_node(node) if isinstance(node, dict) and isinstance(node.get("kind"), str)
                  and isinstance(node.get("version", 0), int) else None)
        defaults = getattr(getattr(pinned, "component", None), "run_settings", None)
        if defaults and isinstance(node.get("run_settings", {}), dict):
            node["run_settings"] = {**defaults, **node.get("run_settings", {})}
    return doc


def check(doc: dict, catalogue, machines=None, compute=None) -> dict:
    """Validate, raising PipelineInvalid with every problem."""
    problems = validate(doc, catalogue, machines, compute)
    if problems:
        raise PipelineInvalid(problems)
    return doc


def dumps(doc: dict) -> str:
    """The one canonical text of a pipeline: stable byte for byte across export/import."""
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
