"""Azure ML's v2 command component files (`$schema: .../commandComponent.schema.json`, `type:
command`), read unchanged: each field translated into the designer's component fields
(sdk/component.py reads the result as it reads its own files), every problem named with the v2
field's own path (`inputs.epochs.max`, `distribution.type`).

    $schema, type: command           accepted (another schema or type is refused: a job, a pipeline)
    name, display_name, version      kind, label, version (a whole number, or text of digits)
    description, tags                description; tags are accepted and not used
    is_deterministic: true           accepted (an unchanged node with the same inputs is reused)
    inputs: {x: {type: integer | number | string | boolean, default, min, max, enum, optional, description}}
                                     parameters (int, float, string or a choice of the enum, bool); an
                                     optional one may be left empty, which drops its $[[...]] group;
                                     one with no default must be given a value before a run
    inputs / outputs: {x: {type: uri_folder | uri_file | mlflow_model | custom_model | <a designer type>}}
                                     ports (uri_folder: AnyDirectory; uri_file: AnyDirectory whose one
                                     file the command gets; the models: ModelDirectory); `mode` is accepted
    code                             the code folder (local only)
    environment                      accepted and recorded (the command runs in the worker's environment)
    distribution: {type: pytorch, process_count_per_instance: N}, resources: {instance_count: N}
                                     distributed, with N x N as the node's default Run settings
    command                          as it is; ${{inputs.x}} of a scalar input is its parameter's value

The designer's own fields `category`, `metrics`, `metric_step` and `launch` may be added. Imports
nothing of the project but the SDK.
"""
from __future__ import annotations

import re
import shlex
from pathlib import Path

from sdk.component_fields import V2_NAME_PATTERN, V2_NAME_RULE, Problems
from sdk.yamltext import short

SCHEMA_PATTERN = re.compile(r"/(\w+)\.schema\.json$")
COMPONENT_SCHEMA = "commandComponent"
FIELDS = ("$schema", "name", "display_name", "version", "description", "tags", "type", "is_deterministic",
          "inputs", "outputs", "code", "environment", "command", "distribution", "resources",
          # the designer's own, which a v2 file may add
          "category", "metrics", "metric_step", "launch")
SCALARS = {"integer": "int", "number": "float", "string": "string", "boolean": "bool"}
PORTS = {"uri_folder": "AnyDirectory", "uri_file": "AnyDirectory", "mlflow_model": "mlflow_model",
         "custom_model": "custom_model"}
NOT_HERE = {"mltable": "an MLTable (read the folder's files with a uri_folder input)",
            "triton_model": "a Triton model"}
SCALAR_FIELDS = ("type", "default", "min", "max", "enum", "optional", "description", "display_name")
PORT_FIELDS = ("type", "optional", "description", "mode", "display_name")
MODES = ("ro_mount", "rw_mount", "download", "upload", "direct", "eval_mount", "eval_download")
_INPUT_PLACEHOLDER = re.compile(r"\$\{\{\s*inputs\s*\.\s*(\w+)\s*\}\}")


def is_v2(data: dict) -> bool:
    """Whether a component file is written in Azure ML's v2 format (its $schema, or its `type`, or a
    `name` where the designer's own files have `kind`)."""
    return "$schema" in data or "type" in data or ("name" in data and "kind" not in data)


def translate(problems: Problems, data: dict) -> tuple[dict, dict]:
    """(the designer's fields, what else the file says: {"uri_files": [input/output names], "environment":
    text, "run_settings": {node_count, process_count_per_node}}). Problems are added with v2 paths."""
    problems.renames.update({"kind": "name", "label": "display_name"})
    problems.names, problems.name_rule = V2_NAME_PATTERN, V2_NAME_RULE
    for key in data:
        if key not in FIELDS:
            problems.add(str(key), f"not a field of a command component the designer reads (its fields: "
                                   f"{', '.join(FIELDS)})")
    _check_kind(problems, data)
    out: dict = {k: data[k] for k in ("description", "category", "metrics", "metric_step", "launch", "command")
                 if k in data}
    out["kind"] = data.get("name")
    out["label"] = data.get("display_name") if data.get("display_name") is not None else data.get("name")
    if "version" in data:
        out["version"] = _version(problems, data["version"])
    if data.get("is_deterministic", True) is not True:
        problems.add("is_deterministic", f"{short(data.get('is_deterministic'))}: not supported: an unchanged node with "
                                         "the same inputs and parameters is reused (tick Regenerate output to run it again)")
    if "tags" in data and not isinstance(data["tags"], dict):
        problems.add("tags", f"expected a mapping of names to values, got {short(data['tags'])}")
    code = data.get("code")
    if isinstance(code, str) and re.match(r"^(azureml:|https?://|git\+|wasbs?://|abfss?://)", code.strip()):
        problems.add("code", f"{short(code)}: only a local folder next to the component file is read here")
    elif code is not None:
        out["code"] = code
    extra: dict = {"uri_files": [], "environment": _environment(problems, data.get("environment"))}
    params, inputs = _inputs(problems, data.get("inputs"), extra)
    out["params"], out["inputs"] = params, inputs
    out["outputs"] = _ports(problems, "outputs", data.get("outputs"), extra, may_be_optional=False)
    settings = _run_settings(problems, data)
    if settings:
        out["distributed"] = True
        extra["run_settings"] = settings
    if isinstance(out.get("command"), str):
        _check_not_shell(problems, out["command"])
        scalars = set(params)
        out["command"] = _INPUT_PLACEHOLDER.sub(
            lambda m: f"${{{{params.{m.group(1)}}}}}" if m.group(1) in scalars else m.group(0), out["command"])
    for name in params:
        problems.renames[f"params.{name}"] = f"inputs.{name}"
    return out, extra


SHELL = ("the command runs as one program and its arguments, not through a shell as on Azure ML: put the steps "
         "in a script and run that (python run.py, or bash run.sh)")


def _check_not_shell(problems: Problems, command: str) -> None:
    """A shell's operators (&&, |, ;, >...) or several command lines would be passed to the program as
    words, silently: refused, naming them."""
    lines = [line for line in command.splitlines() if line.strip()]
    if len(lines) > 1 and not all(line.rstrip().endswith("\\") for line in lines[:-1]):
        problems.add("command", f"{len(lines)} lines: {SHELL}")
        return
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        operators = [t for t in lexer if t and set(t) <= set("();<>|&")]
    except ValueError:  # unbalanced quotes: sdk/component.py says so
        return
    if operators:
        problems.add("command", f"{operators[0]!r}: {SHELL}")


def _check_kind(problems: Problems, data: dict) -> None:
    schema = data.get("$schema")
    if schema is not None:
        m = SCHEMA_PATTERN.search(schema) if isinstance(schema, str) else None
        if m is None:
            problems.add("$schema", f"{short(schema)} is not an Azure ML schema's address "
                                    f"(https://azuremlschemas.azureedge.net/latest/{COMPONENT_SCHEMA}.schema.json)")
        elif m.group(1) != COMPONENT_SCHEMA:
            problems.add("$schema", f"{m.group(1)}: not a command component ({COMPONENT_SCHEMA}): only command "
                                    "components are read as components")
    kind = data.get("type", "command")
    if kind != "command":
        problems.add("type", f"{short(kind)}: not supported: only command components (type: command) are read as "
                             "components")


def _version(problems: Problems, value):
    """A whole number as it is; Azure's dotted text MAJOR.MINOR.PATCH as MAJOR*1,000,000 + MINOR*1,000
    + PATCH (0.0.1 is 1, 1.2.0 is 1002000), so that the designer's order of versions is Azure's."""
    text = str(value).strip() if isinstance(value, (str, int)) and not isinstance(value, bool) else ""
    if text.isdigit() and len(text) < 12:
        return int(text)  # (sdk/component.py checks its range)
    parts = text.split(".") if re.fullmatch(r"\d{1,4}(\.\d{1,3}){1,2}", text) else []
    if parts and int(parts[0]) <= 2000:
        parts += ["0"] * (3 - len(parts))
        number = int(parts[0]) * 1_000_000 + int(parts[1]) * 1_000 + int(parts[2]) if "." in text else int(text)
        if number >= 1:
            return number
    problems.add("version", f"{short(value)}: expected a whole number from 1, or MAJOR.MINOR.PATCH (each part of MINOR "
                            f"and PATCH below 1000, MAJOR at most 2000)")
    return 1


def _environment(problems: Problems, value) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, dict):
        return ", ".join(f"{k}: {v}" for k, v in value.items() if isinstance(v, str))[:500]
    problems.add("environment", f"expected an environment's name (azureml:...) or a mapping (image, conda_file), "
                                f"got {short(value)}")
    return ""


def _inputs(problems: Problems, raw, extra: dict) -> tuple[dict, dict]:
    """(params, ports) of v2 inputs: the scalars are parameters."""
    if raw is None:
        return {}, {}
    if not isinstance(raw, dict):
        problems.add("inputs", f"expected a mapping of names to declarations, got {short(raw)}")
        return {}, {}
    scalars = {name: decl for name, decl in raw.items() if isinstance(decl, dict) and decl.get("type") in SCALARS}
    params = {name: _scalar(problems, f"inputs.{name}", decl) for name, decl in scalars.items()}
    ports = _ports(problems, "inputs", {n: d for n, d in raw.items() if n not in scalars}, extra, may_be_optional=True)
    return {n: p for n, p in params.items() if p is not None}, ports


def _scalar(problems: Problems, where: str, decl: dict) -> dict | None:
    for key in decl:
        if key not in SCALAR_FIELDS:
            problems.add(f"{where}.{key}", f"not a field of a scalar input the designer reads (its fields: "
                                           f"{', '.join(SCALAR_FIELDS)})")
    kind = SCALARS[decl["type"]]
    out: dict = {"type": kind}
    if decl.get("display_name") is not None:
        out["label"] = decl["display_name"]
    if decl.get("description") is not None:
        out["help"] = decl["description"]
    optional = decl.get("optional", False)
    if not isinstance(optional, bool):
        problems.add(f"{where}.optional", f"expected true or false, got {short(optional)}")
        optional = False
    out["optional"] = optional
    if "default" in decl:
        out["default"] = decl["default"]
    for bound in ("min", "max"):
        if bound in decl:
            if kind not in ("int", "float"):
                problems.add(f"{where}.{bound}", f"only an integer or number input has a {bound}")
            else:
                out[bound] = decl[bound]
    if "enum" in decl:
        if kind != "string":
            problems.add(f"{where}.enum", "only a string input has an enum")
        else:
            out["type"], out["choices"] = "choice", decl["enum"]
            if "default" not in decl and not optional:
                out["default"] = None  # as Azure: a value must be chosen
    return out


def _ports(problems: Problems, group: str, raw, extra: dict, may_be_optional: bool) -> dict:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        problems.add(group, f"expected a mapping of names to declarations, got {short(raw)}")
        return {}
    ports = {}
    for name, decl in raw.items():
        where = f"{group}.{name}"
        if isinstance(decl, str):
            decl = {"type": decl}
        if not isinstance(decl, dict):
            problems.add(where, f"expected a mapping {{type: ...}}, got {short(decl)}")
            continue
        allowed = PORT_FIELDS if may_be_optional else tuple(f for f in PORT_FIELDS if f != "optional")
        for key in decl:
            if key not in allowed:
                problems.add(f"{where}.{key}", f"not a field of {'an input' if may_be_optional else 'an output'} the "
                                               f"designer reads (its fields: {', '.join(allowed)})")
        kind = decl.get("type")
        if kind in NOT_HERE:
            problems.add(f"{where}.type", f"{kind}: not supported: {NOT_HERE[kind]}")
            continue
        if decl.get("mode") is not None and decl["mode"] not in MODES:
            problems.add(f"{where}.mode", f"{short(decl['mode'])} is not a mode (one of: {', '.join(MODES)}); every "
                                          "input and output is a folder on the worker here")
        port: dict = {"type": PORTS.get(kind, kind)} if isinstance(kind, str) else {"type": kind}
        if kind == "uri_file":
            extra["uri_files"].append(f"{group}.{name}")
        for theirs, ours in (("display_name", "label"), ("description", "help"), ("optional", "optional")):
            if decl.get(theirs) is not None and (theirs != "optional" or may_be_optional):
                port[ours] = decl[theirs]
        ports[name] = port
    return ports


def _run_settings(problems: Problems, data: dict) -> dict:
    """{node_count, process_count_per_node} of `distribution` and `resources` ({} when neither)."""
    settings = {}
    distribution = data.get("distribution")
    if distribution is not None:
        if not isinstance(distribution, dict):
            problems.add("distribution", f"expected a mapping {{type: pytorch, process_count_per_instance: N}}, got "
                                         f"{short(distribution)}")
        else:
            for key in distribution:
                if key not in ("type", "process_count_per_instance"):
                    problems.add(f"distribution.{key}", "not supported (the fields: type, process_count_per_instance)")
            if distribution.get("type") != "pytorch":
                problems.add("distribution.type", f"{short(distribution.get('type'))}: not supported: the designer "
                                                  "starts PyTorch's processes (type: pytorch) only")
            settings["process_count_per_node"] = _count(problems, "distribution.process_count_per_instance",
                                                        distribution.get("process_count_per_instance", 1))
    resources = data.get("resources")
    if resources is not None:
        if not isinstance(resources, dict):
            problems.add("resources", f"expected a mapping {{instance_count: N}}, got {short(resources)}")
        else:
            for key in resources:
                if key != "instance_count":
                    problems.add(f"resources.{key}", "not supported: the designer places a node on its workers by "
                                                     "the Run settings (the field here: instance_count)")
            if "instance_count" in resources:
                settings["node_count"] = _count(problems, "resources.instance_count", resources["instance_count"])
    return settings


def _count(problems: Problems, where: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 1024:
        problems.add(where, f"expected a whole number from 1 to 1024, got {short(value)}")
        return 1
    return value


def is_v2_file(path, component_file_name: str = "component.yaml") -> bool:
    """Whether a YAML file (not named component.yaml) is an Azure ML v2 command component file: its
    first lines name commandComponent's schema (`$schema: .../commandComponent.schema.json`)."""
    path = Path(path)
    if path.suffix not in (".yml", ".yaml") or path.name == component_file_name:
        return False
    try:
        with path.open("rb") as f:
            head = f.read(4096).decode("utf-8", errors="replace")
    except OSError:
        return False
    return re.search(r"^\$schema:\s*\S*/commandComponent\.schema\.json", head, re.M) is not None
