"""A component file: a module declared in YAML, whose command runs the user's own code.

    my_component/
        component.yaml          what `load()` reads (the fields below)
        pytorch_train.py        its code: the folder `code` names (default: the file's folder)

    kind: pytorch_train            # stable id stored in pipeline JSON: ^[a-z][a-z0-9_]{0,63}$
    label: PyTorch Train (script)  # palette name
    category: My components        # default "Custom components"
    version: 1                     # positive whole number; a new version keeps the old one
    description: ...
    distributed: true              # offers Run settings (node count x process count per node)
    launch: per_process            # or per_node: one command per node that starts the node's processes
    code: .                        # folder of the code, relative to this file, inside its folder
    command: >-
      python pytorch_train.py --data {inputs.training_data} --num_epochs {params.num_epochs}
      --output_dir {outputs.model} $[[--val {inputs.validation_data}]]
    inputs:                        # name: {type, label, optional, help} (or name: <type>)
      training_data: {type: ImageDirectory, label: Training data, layout: image_folder}  # <class>/<image> links
    outputs:                       # name: {type, label, help}
      model: {type: ModelDirectory, label: Model}
    params:                        # name: {type: int|float|bool|choice|string, default, help, ...}
      num_epochs: {type: int, default: 5, min: 1, max: 1000}
    metrics: [training_loss]       # the names a sweep may optimise
    metric_step: epoch             # what a metric's step counts (default: step): "epoch 3/10" on the node

`{inputs.x}`, `{params.x}` and `{outputs.x}` (also Azure's `${{inputs.x}}`) are replaced by an
input's folder, a parameter's value and an output's folder; `$[[ ... ]]` (Azure's optional group)
is dropped when an optional input inside it is not connected. `$NODE_RANK`, `$MASTER_ADDR`... are
each process's own (sdk/command_vars.py). `python` or `python3` as the first word is the worker's
own interpreter. Every problem of a file is refused with ComponentError,
naming the file, the field and the reason. Imports nothing of the project but the SDK.
"""
from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from sdk import azure_component, command_vars, yamltext
from sdk.component_code import FILE_NAME, IGNORED, code_files, copy_code, digest, find  # noqa: F401 - this module's API
from sdk.component_fields import (
    ComponentError,
    Problems,
    declared_as,
    may_be_empty,
    parse_image_folders,
    parse_params,
    parse_ports,
    text_field,
)
from sdk.declarations import Param, Port
from sdk.yamltext import short

__all__ = ["FILE_NAME", "ComponentError", "ComponentSpec", "load", "render", "arguments", "digest", "copy_code", "find"]

DEFAULT_CATEGORY = "Custom components"
KIND_PATTERN = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
FIELDS = ("kind", "label", "category", "version", "description", "distributed", "launch", "code", "command",
          "inputs", "outputs", "params", "metrics", "metric_step")
# per_process: the designer starts Node count x Process count per node processes, each running the
# command (torchrun); per_node: one per node, whose command starts that node's processes itself
# (`python -m torch.distributed.launch --node_rank $NODE_RANK ...`, the original's per-node launch)
LAUNCHES = ("per_process", "per_node")
REQUIRED = ("kind", "label", "command")
MAX_VERSION = 2**31 - 1  # what the database stores
GROUPS = ("inputs", "params", "outputs")
PYTHON_WORDS = ("python", "python3")

STEP_PATTERN = re.compile(r"^[a-z][a-z_]{0,31}$")
_OPTIONAL_GROUP = re.compile(r"\$\[\[(.*?)\]\]", re.S)
_PLACEHOLDER = re.compile(r"\$\{\{\s*([A-Za-z_]\w*)\s*\.\s*(\w+)\s*\}\}|\{([A-Za-z_]\w*)\.(\w+)\}")


@dataclass(eq=False)
class ComponentSpec:
    """What a component file declares (load() checked all of it)."""

    file: Path
    folder: Path
    kind: str
    label: str
    category: str
    version: int
    description: str
    inputs: list[Port]
    outputs: list[Port]
    params: list[Param]
    distributed: bool
    code: Path
    command: str
    metrics: tuple[str, ...] = field(default=())
    metric_step: str = "step"
    launch: str = "per_process"
    # inputs given to the command as an ImageFolder tree (`layout: image_folder`): <folder>/<class>/<image>
    image_folders: tuple[str, ...] = ()
    # outputs declared `type: mlflow_model`: where mlflow.pytorch.log_model keeps the script's model
    mlflow_outputs: tuple[str, ...] = ()
    # an Azure ML v2 file's: its ports declared uri_file ("inputs.x", "outputs.y": the command gets the
    # input's one file, and a file path in the output's folder), its environment (recorded, not built),
    # and the Run settings its distribution and resources give a new node
    uri_files: tuple[str, ...] = ()
    environment: str = ""
    run_settings: dict = field(default_factory=dict)

    def digest(self) -> str:
        return digest(self)

    def arguments(self) -> dict[str, str]:
        """{script flag: parameter name}: what a sweep may name (arguments())."""
        return arguments(self)


# --------------------------------------------------------------------------- loading


def load(path) -> ComponentSpec:
    """The component of a component.yaml; ComponentError naming the file, field and reason of
    every problem found (the first one in the message's first line)."""
    file = Path(path).absolute()
    data = _read(file)
    problems = Problems(file)
    v2 = azure_component.is_v2(data)
    extra: dict = {}
    if v2:  # Azure ML's v2 command component: its fields as the designer's, its problems named by its own paths
        data, extra = azure_component.translate(problems, data)
    for key in data if not v2 else ():
        if key not in FIELDS:
            problems.add(str(key), f"unknown field (the fields are: {', '.join(FIELDS)})")
    for key in REQUIRED:
        if data.get(key) is None:
            problems.add(key, "missing")
    kind = text_field(problems, data, "kind", "")
    if kind and not KIND_PATTERN.fullmatch(kind):
        problems.add("kind", f"{short(kind)} is not a kind: 1 to 64 lowercase letters, digits or '_', starting with a letter")
    inputs = parse_ports(problems, data, "inputs", may_be_optional=True)
    outputs = parse_ports(problems, data, "outputs", may_be_optional=False)
    params = parse_params(problems, data, may_lack_default=v2)
    _check_unique_names(problems, inputs, outputs, params)
    spec = ComponentSpec(
        file=file, folder=file.parent, kind=kind, label=text_field(problems, data, "label", "").strip(),
        category=text_field(problems, data, "category", DEFAULT_CATEGORY).strip() or DEFAULT_CATEGORY,
        version=_version(problems, data), description=text_field(problems, data, "description", "").strip(),
        inputs=inputs, outputs=outputs, params=params, distributed=_flag(problems, data, "distributed"),
        code=_code_folder(problems, file, data), command=text_field(problems, data, "command", "").strip(),
        metrics=_metrics(problems, data), metric_step=text_field(problems, data, "metric_step", "step").strip(),
        launch=text_field(problems, data, "launch", LAUNCHES[0]).strip())
    spec.image_folders = parse_image_folders(problems, data, inputs)
    spec.mlflow_outputs = declared_as(data, "outputs", outputs, "mlflow_model")
    spec.uri_files = tuple(extra.get("uri_files", ()))
    spec.environment = extra.get("environment", "")
    spec.run_settings = dict(extra.get("run_settings", {}))
    if spec.launch not in LAUNCHES:
        problems.add("launch", f"{short(spec.launch)} is not a launch: per_process (the designer starts every process) "
                               f"or per_node (the command starts its node's processes)")
    elif spec.launch == "per_node" and not spec.distributed:
        problems.add("launch", "per_node is a way to start a distributed job: add `distributed: true`")
    if not STEP_PATTERN.fullmatch(spec.metric_step):
        problems.add("metric_step", f"{short(spec.metric_step)} is not a word such as epoch, step or iteration")
    if data.get("label") is not None and not spec.label:
        problems.add("label", "empty")
    if isinstance(data.get("command"), str):  # (another type: the field's own error says so, once)
        _check_command(problems, spec)
    problems.raise_any()
    return spec


def _read(file: Path) -> dict:
    try:
        text = file.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise ComponentError(file, "file", "no such file") from None
    except UnicodeDecodeError:
        raise ComponentError(file, "file", "not UTF-8 text") from None
    except OSError as e:
        raise ComponentError(file, "file", f"cannot be read: {e.strerror or e}") from None
    try:
        data = yamltext.load(text)  # a key declared twice, or aliases standing for too many values: refused
    except yamltext.YamlTextError as e:
        raise ComponentError(file, e.where or "file", str(e)) from None
    except (RecursionError, ValueError):  # thousands of nested levels; an integer of thousands of digits
        raise ComponentError(file, "file", "nested too deeply, or holds an integer too long to read") from None
    except yaml.YAMLError as e:
        where = getattr(e, "problem_mark", None)
        line = f" (line {where.line + 1}, column {where.column + 1})" if where else ""
        raise ComponentError(file, "file", f"not YAML{line}: {getattr(e, 'problem', None) or e}") from None
    if not isinstance(data, dict):
        raise ComponentError(file, "file", f"expected a mapping of fields (kind, label, command...), got {_kind_of(data)}")
    return data


def _kind_of(value) -> str:
    return "nothing" if value is None else f"a {type(value).__name__} ({short(str(value)[:40])})"


def _version(problems: Problems, data: dict) -> int:
    value = data.get("version", 1)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_VERSION:
        problems.add("version", f"expected a whole number from 1 to {MAX_VERSION:,}, got {short(value)}")
        return 1
    return value


def _flag(problems: Problems, data: dict, name: str) -> bool:
    value = data.get(name, False)
    if not isinstance(value, bool):
        problems.add(name, f"expected true or false, got {short(value)}")
        return False
    return value


def _code_folder(problems: Problems, file: Path, data: dict) -> Path:
    value = data.get("code", ".")
    if not isinstance(value, str) or not value.strip():
        problems.add("code", f"expected a folder relative to the component file, got {short(value)}")
        return file.parent
    base = file.parent.resolve()
    folder = (base / value.strip()).resolve()
    if folder != base and not folder.is_relative_to(base):
        problems.add("code", f"{short(value)} leads outside the component's folder")
    elif not folder.is_dir():
        problems.add("code", f"{short(value)}: no such folder next to the component file")
    return folder


def _metrics(problems: Problems, data: dict) -> tuple[str, ...]:
    value = data.get("metrics") or []
    if not isinstance(value, list) or not all(isinstance(m, str) and m.strip() for m in value):
        problems.add("metrics", f"expected a list of metric names, got {short(value)}")
        return ()
    if len(set(value)) != len(value):
        problems.add("metrics", "a metric is named twice")
    return tuple(m.strip() for m in value)


def _check_unique_names(problems: Problems, inputs, outputs, params) -> None:
    """A name (and a port label within its side) names one thing: placeholders, links and messages."""
    seen: dict[str, str] = {}
    for group, items in (("inputs", inputs), ("outputs", outputs), ("params", params)):
        labels: dict[str, str] = {}
        for item in items:
            where = f"{group}.{item.name}"
            if item.name in seen:
                problems.add(where, f"the name {short(item.name)} is already used by {seen[item.name]}")
            seen.setdefault(item.name, where)
            if item.label.lower() in labels:
                problems.add(f"{where}.label", f"{short(item.label)} is already the label of {labels[item.label.lower()]}")
            labels.setdefault(item.label.lower(), where)


# --------------------------------------------------------------------------- the command


def _placeholders(text: str):
    for m in _PLACEHOLDER.finditer(text):
        yield m, (m.group(1) or m.group(3)), (m.group(2) or m.group(4))


def _check_command(problems: Problems, spec: ComponentSpec) -> None:
    command = spec.command
    if not command:
        problems.add("command", "empty: the command line to run, such as 'python train.py --data {inputs.data}'")
        return
    inputs, params = {p.name: p for p in spec.inputs}, {p.name: p for p in spec.params}
    declared: dict[str, Mapping[str, Port | Param]] = {"inputs": inputs, "params": params,
                                                       "outputs": {p.name: p for p in spec.outputs}}
    groups = list(_OPTIONAL_GROUP.finditer(command))
    outside = _OPTIONAL_GROUP.sub(" ", command)
    if "$[[" in outside:
        problems.add("command", "'$[[' is never closed with ']]'")
    for g in groups:
        if "$[[" in g.group(1):
            problems.add("command", f"optional groups cannot be nested: {short(g.group(0))}")
        elif not any((group == "inputs" and name in inputs and inputs[name].optional)
                     or (group == "params" and name in params and may_be_empty(params[name]))
                     for _, group, name in _placeholders(g.group(1))):
            problems.add("command", f"the optional group {short(g.group(0))} holds no optional input: it would never be dropped")
    for m, group, name in _placeholders(command):
        if group not in declared:
            problems.add("command", f"{m.group(0)}: unknown placeholder group {short(group)} (use inputs, params or outputs)")
        elif name not in declared[group]:
            known = ", ".join(declared[group]) or "none"
            problems.add("command", f"{m.group(0)} names no declared {group[:-1]} (declared {group}: {known})")
    for m, group, name in _placeholders(outside):
        port = inputs.get(name) if group == "inputs" else None
        if port is not None and port.optional:
            problems.add("command", f"{m.group(0)} is an optional input: put it in an optional group, "
                                    f"$[[--flag {m.group(0)}]], which is dropped when it is not connected")
        if group == "params" and name in params and may_be_empty(params[name]):
            problems.add("command", f"{m.group(0)} is an optional input: put it in an optional group, "
                                    f"$[[--flag {m.group(0)}]], which is dropped when it has no value")
    named = {name for _, group, name in _placeholders(command) if group == "outputs"}
    for port in spec.outputs:
        # the script could never learn where to write it: it would always end empty (but for an MLflow
        # model, which mlflow.pytorch.log_model keeps there: sdk/compat)
        if port.name not in named and port.name not in spec.mlflow_outputs:
            problems.add(f"outputs.{port.name}", f"never passed to the command: add {{outputs.{port.name}}} where "
                                                 f"the script takes the folder to write it in")
    for text in (_OPTIONAL_GROUP.sub(r" \1 ", command), outside):
        try:
            words = shlex.split(text)
        except ValueError as e:
            problems.add("command", f"cannot be split into words: {e}")
            break
        if not words:
            problems.add("command", "empty once its optional groups are dropped")


def render(spec: ComponentSpec, inputs: dict, params: dict, outputs: dict, python: str) -> list[str]:
    """The argv of the command: the template split into words first (shell quoting rules), then
    each placeholder replaced within its word, so that a folder with spaces stays one argument.
    inputs: {name: folder or None (not connected)}; bools are written true/false."""
    def connected(group_text: str) -> bool:  # every input it names is connected, every parameter has a value
        return all((inputs if group == "inputs" else params).get(name) is not None
                   for _, group, name in _placeholders(group_text) if group in ("inputs", "params"))

    text = _OPTIONAL_GROUP.sub(lambda g: f" {g.group(1)} " if connected(g.group(1)) else " ", spec.command)
    values = {"inputs": inputs, "params": params, "outputs": outputs}

    def value(m: re.Match) -> str:
        group, name = (m.group(1) or m.group(3)), (m.group(2) or m.group(4))
        v = values[group].get(name)
        if v is None:
            what = "input is not connected" if group == "inputs" else "has no value"
            raise ComponentError(spec.file, f"{group}.{name}", f"{spec.label}: the {what}")
        if isinstance(v, bool):
            return "true" if v else "false"
        return repr(v) if isinstance(v, (int, float)) else str(v)

    argv = [_PLACEHOLDER.sub(value, command_vars.mark(word)) for word in shlex.split(text)]
    if argv and argv[0] in PYTHON_WORDS:
        argv[0] = python
    return argv


def arguments(spec: ComponentSpec) -> dict[str, str]:
    """{flag: parameter name} of each script argument the command passes a parameter to, written
    `--learning_rate {params.learning_rate}` or `--learning_rate={params.learning_rate}` (in an
    optional group too), in the command's order: what a sweep file may name (HyperDrive's
    `name: --learning_rate`). A flag passed two parameters keeps the first."""
    try:
        words = shlex.split(_OPTIONAL_GROUP.sub(r" \1 ", spec.command))
    except ValueError:  # load() refuses such a command
        return {}
    found: dict[str, str] = {}
    for word, following in zip(words, [*words[1:], ""]):
        flag, equals, value = word.partition("=")
        m = _PLACEHOLDER.fullmatch(value if equals else following)
        if flag.startswith("-") and flag.strip("-") and m and (m.group(1) or m.group(3)) == "params":
            found.setdefault(flag, m.group(2) or m.group(4))
    return found
