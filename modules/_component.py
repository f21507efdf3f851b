"""The module of a component file (sdk/component.py): its declaration comes from the file, and
its run() runs the file's command on the worker, in a copy of the code in the node's folder.

    <node dir>/code/          a fresh copy of the component's code folder: the command's working folder
    <node dir>/work/          the metrics file and stop file the script's sdk helpers use
    <node dir>/inputs/<name>/ an input declared `layout: image_folder`: <class>/<image> links to its images
    <node dir>/<output>/      each output's folder (the command writes there; nothing: EmptyOutput)
    <node dir>/mlflow_model/  the MLflow model the script logged (mlflow.pytorch.log_model) where it
                              declared no output of type mlflow_model: an output made for the node
    <node dir>/logs/70_driver_log.txt    the command's stdout and stderr (one per rank when distributed)

One process: supervision.command runs it as a child process. Node count x Process count per node
above 1: every process of the job runs `python -m supervision.command --cwd <code> -- <argv>`,
started by the designer's workers as for Train PyTorch Model; with `launch: per_node`, one process
per node runs it, and its command starts the node's processes (sdk/component.py). A command asked to stop early (a
sweep's policy) that is still running after the grace (ctx.stop_grace_seconds) is ended, and the
node completes with what it wrote: its outputs are marked `partial: true` in their _meta.yaml, and
an output it never wrote is left empty rather than failing the node. Not a module file of its own (its
name starts with `_`): modules/catalogue.py makes one class per component file.
"""
from __future__ import annotations

import json
import re
import shlex
import shutil
import sys
from pathlib import Path

import yaml

from sdk import command_vars, compat
from sdk import component as component_file
from sdk.component import ComponentSpec
from sdk.context import ENDED, DistributedJob
from sdk.declarations import ModelDirectory, Module
from sdk.errors import EmptyOutput, ModuleError
from sdk.formats import image_directory, metrics
from sdk.layout import ATTEMPT_ENV, CHECKPOINT_DIR_ENV, CHECKPOINTS_DIR, META_FILE
from supervision import command

CODE_DIR = "code"
INPUTS_DIR = "inputs"  # the ImageFolder trees of inputs declared `layout: image_folder`
WORK_DIR = "work"
STOP_FILE = "STOP"
MADE_MLFLOW_OUTPUT = "mlflow_model"  # the output of a node whose script logged an MLflow model it declared no output for


class CommandComponent(Module):
    """A module declared in a component file: runs its command."""

    component: ComponentSpec | None = None
    timeout_setting = True

    def run(self, ctx, /, **inputs):  # positional ctx: an input may be named anything, "ctx" too
        spec = self.component
        code = component_file.copy_code(spec, ctx.node_dir / CODE_DIR)
        work = ctx.node_dir / WORK_DIR
        checkpoints = work / CHECKPOINTS_DIR  # kept for the next attempt when the worker is lost
        if ctx.attempt > 1 and checkpoints.is_dir():
            for stale in work.iterdir():
                if stale != checkpoints:
                    shutil.rmtree(stale, ignore_errors=True) if stale.is_dir() else stale.unlink(missing_ok=True)
            ctx.log(f"attempt {ctx.attempt}: {CHECKPOINT_DIR_ENV} holds what the lost attempt saved "
                    f"({sum(1 for f in checkpoints.rglob('*') if f.is_file())} file(s))")
        else:
            shutil.rmtree(work, ignore_errors=True)
        checkpoints.mkdir(parents=True, exist_ok=True)
        attempt_env = {CHECKPOINT_DIR_ENV: str(checkpoints), ATTEMPT_ENV: str(ctx.attempt)}
        outputs = {p.name: ctx.output_dir(p.name) for p in spec.outputs}
        folders = {p.name: None if inputs.get(p.name) is None else str(inputs[p.name].path) for p in spec.inputs}
        for port in spec.inputs:  # an Azure ML v2 file's uri_file input: the command gets the folder's one file
            if f"inputs.{port.name}" in spec.uri_files and folders[port.name] is not None:
                folders[port.name] = str(_one_file(spec, port, Path(folders[port.name])))
        for port in spec.inputs:
            if port.name in spec.image_folders and inputs.get(port.name) is not None:
                folders[port.name] = str(_image_folder(ctx, spec, port, inputs[port.name]))
        given = {k: str(v / k if f"outputs.{k}" in spec.uri_files else v) for k, v in outputs.items()}  # uri_file: a file there
        argv = component_file.render(spec, folders, ctx.params, given, python=sys.executable)
        if spec.environment:
            ctx.log(f"environment {spec.environment!r} (the component file's): not built here; the command runs in the "
                    f"worker's own environment")
        metrics_file, stop_file = work / metrics.METRICS_FILE, work / STOP_FILE
        models = {compat.MLFLOW_MODELS_ENV: json.dumps(_mlflow_models(ctx, spec, outputs))}
        timeout = ctx.run_settings.get("timeout_seconds", 0) or 0
        ctx.log(f"runs {shlex.join(command_vars.shown(argv))} in {code}"
                + (f" ({ctx.world_size} processes)" if ctx.world_size > 1 else "")
                + (f", timeout {timeout} s" if timeout else ""))
        if ctx.world_size == 1:
            stopped = command.run(argv, code, ctx.log_path,
                                  env={**command.environment(metrics_file, stop_file), **models, **attempt_env},
                                  timeout=timeout,
                                  check_cancelled=ctx.check_cancelled, stop_requested=ctx.stop_requested, stop_file=stop_file,
                                  metrics_file=metrics_file, on_metric=ctx.metric, label=spec.label,
                                  stop_grace=ctx.stop_grace_seconds)
        else:
            stopped = ctx.launch_distributed(DistributedJob(
                "supervision.command", ["--cwd", str(code), "--", *argv], metrics_file=metrics_file, stop_file=stop_file,
                env={**command.job_env(metrics_file, stop_file), **models, **attempt_env}, timeout=timeout,
                stop_grace=ctx.stop_grace_seconds, per_node=spec.launch == "per_node",
                max_restarts=ctx.run_settings["max_retries"],
                gpu_argv=[]))  # GPUs when every node has them: CUDA_VISIBLE_DEVICES names them (launchers/specs.py)
        if stopped is not None:
            ctx.report_stop(stopped)
        ended = stopped is not None and stopped.how == ENDED
        for port in spec.outputs:
            _check_output(ctx, spec, port, outputs[port.name], ended)
            if ended:
                ctx.set_meta(port.name, partial=True)
        shutil.rmtree(work, ignore_errors=True)


def _mlflow_models(ctx, spec: ComponentSpec, outputs: dict[str, Path]) -> dict:
    """Where mlflow.pytorch.log_model keeps the script's model (sdk/compat MLFLOW_MODELS_ENV): the
    outputs declared `type: mlflow_model`; where there is none, an output made for the node,
    MADE_MLFLOW_OUTPUT, kept if the script logs a model (an MLflow model: registers and deploys)."""
    declared = {name: str(outputs[name]) for name in spec.mlflow_outputs}
    if declared:
        return {"outputs": declared}
    name = next(n for n in (MADE_MLFLOW_OUTPUT, f"{MADE_MLFLOW_OUTPUT}_logged") if n not in outputs)
    return {"made": str(ctx.made_output(name, ModelDirectory.name))}


def _one_file(spec: ComponentSpec, port, folder: Path) -> Path:
    """The one file of an input declared `type: uri_file` (its _meta.yaml aside), or ModuleError."""
    files = [f for f in folder.rglob("*") if f.is_file() and f.relative_to(folder).as_posix() != META_FILE]
    if len(files) != 1:
        raise ModuleError(f"{spec.label}: input '{port.label}' is declared uri_file (one file), but the folder it "
                          f"receives holds {len(files)} files" + (f" ({', '.join(sorted(f.name for f in files)[:5])}...)"
                                                                  if len(files) > 1 else ""))
    return files[0]


def _image_folder(ctx, spec: ComponentSpec, port, given) -> Path:
    """An input declared `layout: image_folder`: its images as <node>/inputs/<name>/<class>/<image>
    links (nothing copied). Inputs named train and val make <node>/inputs the tutorial's data folder."""
    images = image_directory.read(given, spec.label, f"input '{port.label}'")
    tree = ctx.node_dir / INPUTS_DIR / port.name
    shutil.rmtree(tree, ignore_errors=True)
    count = image_directory.link_tree(images, tree, spec.label, f"input '{port.label}'")
    ctx.log(f"input '{port.label}': {count} images as an ImageFolder tree of {len(images.classes)} class folders "
            f"(links) in {tree}" + ("; the transforms Apply Image Transformation recorded are not applied: the script "
                                    "reads the image files" if images.transforms else ""))
    return tree


def _check_output(ctx, spec: ComponentSpec, port, folder, ended: bool = False) -> None:
    """An output left empty is the script's mistake, named, unless the script was ended by a stop
    request (`ended`: then it is marked partial); its own _meta.yaml fields are kept."""
    meta_file = folder / META_FILE
    if ended and not any(f.is_file() for f in folder.rglob("*") if f != meta_file):
        ctx.log(f"output '{port.label}' is empty: the script was ended before it wrote anything there")
    elif not any(f.is_file() for f in folder.rglob("*") if f != meta_file):
        raise EmptyOutput(f"{spec.label}: output '{port.label}' is empty: the command wrote nothing to "
                          f"{{outputs.{port.name}}}")
    if meta_file.is_file():
        try:
            fields = yaml.safe_load(meta_file.read_text(encoding="utf-8"))
        except (yaml.YAMLError, UnicodeDecodeError) as e:
            raise ModuleError(f"{spec.label}: output '{port.label}': the {META_FILE} the command wrote is not "
                              f"YAML: {e}") from None
        if fields is None:
            return
        if not isinstance(fields, dict):
            raise ModuleError(f"{spec.label}: output '{port.label}': the {META_FILE} the command wrote is not a "
                              f"mapping of fields")
        ctx.set_meta(port.name, **{str(k): v for k, v in fields.items() if str(k) != "type"})


def _class_name(kind: str) -> str:
    return "".join(part.title() for part in re.split(r"_+", kind) if part) + "Component"


def component_module(spec: ComponentSpec, origin: str = "") -> type[CommandComponent]:
    """The module type of a component file: a CommandComponent with the file's declarations.
    `origin`: where it comes from, as the catalogue shows it (a settings folder, "uploaded")."""
    return type(_class_name(spec.kind), (CommandComponent,), {
        "__module__": __name__, "__doc__": spec.description or None, "kind": spec.kind, "label": spec.label,
        "category": spec.category, "version": spec.version, "description": spec.description,
        "inputs": list(spec.inputs), "outputs": list(spec.outputs), "params": list(spec.params),
        "distributed": spec.distributed, "metrics": tuple(spec.metrics), "metric_step": spec.metric_step, "component": spec,
        "component_origin": origin, "timeout_setting": True})
