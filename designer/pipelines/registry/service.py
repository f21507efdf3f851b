"""The model registry: a run's trained model registered under a name as version 1, 2, 3...

What registers: the Trained model of Train PyTorch Model, the ONNX model of Export to ONNX, and any
output of a component declared as a model (sdk/formats/custom_model.py: a folder of weights saved
by torch.save, an ONNX file, an MLflow model folder), copied as it is; its `format` says which.

`register()` copies the model directory into a folder of its own (ARTIFACT_ROOT/models/<owner>/
<model>/<version>: deleting the run keeps it) and records where it came from (lineage: run,
pipeline, node, the datasets it was trained and validated on, its parameters and its best
epoch's metrics). Its packaging (a torch.export program for plain torch, the ONNX graph an
endpoint serves) needs torch: a worker does it (`prepare`, sent as a Celery task by name).
`bind()` is the one gate between a "Registered model" node and a version's folder, as
datasets.bind is for files: it runs at submit and only ever finds the run owner's versions.
"""
from __future__ import annotations

import contextlib
import logging
import re
import shutil
import tempfile
from datetime import timedelta
from pathlib import Path

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from designer.celery import PREPARE_VERSION, app
from designer.engine import graph, jsontext, paths
from designer.engine import statuses as st
from designer.engine.store import StoreError, check_key
from designer.pipelines import artifact_store
from designer.pipelines.catalogue.service import get_catalogue
from designer.pipelines.models import ModelVersion, NodeRun, RegisteredModel, Run
from designer.pipelines.registry import lineage
from sdk.formats import custom_model, onnx_model
from sdk.formats import model as model_format
from sdk.formats.meta import read_meta

REGISTERED_MODEL_KIND = "registered_model"
TRAIN_KIND, EXPORT_KIND = "train_pytorch_model", "export_to_onnx"
SOURCES = {TRAIN_KIND: "trained_model", EXPORT_KIND: "onnx_model"}  # module kind: its model output
NAME_RULE = "1 to 100 letters, digits, '_', '-' or '.', starting with a letter or digit"
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")  # NAME_RULE in words
RESEND_AFTER = timedelta(minutes=2)  # a packaging message not picked up by then is sent again
log = logging.getLogger(__name__)
RECLAIM_AFTER = timedelta(minutes=30)  # a packaging that started and never ended (its worker died)


class RegistryError(ValueError):
    """A request the registry refuses; `status` is the HTTP status the API answers."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


def check_name(name) -> str:
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
        raise RegistryError(f"model name {name!r} is not usable: a name is {NAME_RULE}")
    return name


def check_tags(tags) -> dict:
    if tags is None:
        return {}
    if not isinstance(tags, dict) or not all(isinstance(k, str) and k and isinstance(v, (str, int, float)) for k, v in tags.items()):
        raise RegistryError("tags must be an object of names to text values, e.g. {\"dataset\": \"digits\"}")
    return {k[:100]: str(v)[:500] for k, v in tags.items()}


# --------------------------------------------------------------------------- registering


def register(owner, run_id, node_id, name, description: str = "", tags=None, output=None) -> ModelVersion:
    """Register the model that node `node_id` of run `run_id` output (its output port `output`,
    needed only where a component has several model outputs), as the next version of `name`.
    RegistryError (naming the node and why) for anything but a completed model output. A trained
    ModelDirectory is packaged on a worker (send_prepare); a folder in a format of its own is
    ready at once (an entry script serves it)."""
    name, tags = check_name(name), check_tags(tags)
    if not isinstance(description, str):
        raise RegistryError("description must be text")
    if output is not None and not isinstance(output, str):
        raise RegistryError(f"`output` is the name of the node's output port (text), got {type(output).__name__}")
    if not _is_id(run_id):
        raise RegistryError(f"`run` is a run's id (a whole number), got {run_id!r}")
    run = Run.objects.filter(pk=run_id, owner=owner).first()
    if run is None:
        raise RegistryError(f"you have no run {run_id!r}", status=404)
    with contextlib.ExitStack() as here:  # (with a bucket: the model's folders downloaded for the copy)
        model_dir, onnx_dir, source = _sources(run, node_id, output or None, here)
        fmt = custom_model.DESIGNER if onnx_dir is not None else custom_model.format_of(model_dir)
        info = model_format.read_info(model_dir) if fmt == custom_model.DESIGNER else {}
        with transaction.atomic():
            registered, _ = RegisteredModel.objects.get_or_create(owner=owner, name=name)
            registered = RegisteredModel.objects.select_for_update().get(pk=registered.pk)  # numbers one at a time
            number = max(registered.last_version, registered.versions.aggregate(n=Max("version"))["n"] or 0) + 1
            key = paths.model_version_dir("/", owner.id, registered.id, number).relative_to(Path("/").resolve()).as_posix()
            root = artifact_store.get().local_root()
            folder = paths.inside(root, key) if root is not None else Path(here.enter_context(tempfile.TemporaryDirectory()), "v")
            try:
                _copy(model_dir, onnx_dir, folder)
                if root is None:
                    artifact_store.get().upload_tree(key, folder)  # before its row commits: never a row without files
                ready = {} if fmt == custom_model.DESIGNER else {"status": st.READY}  # nothing to package
                version = ModelVersion.objects.create(
                    model=registered, version=number, description=description[:5000], tags=tags,
                    folder=key, format=fmt,
                    has_onnx=onnx_dir is not None or custom_model.image_onnx(folder), **ready,
                    size=_size(folder), run=run, pipeline=run.pipeline, node_id=node_id,
                    lineage=lineage.of(run, source, info))
            except BaseException:
                shutil.rmtree(folder, ignore_errors=True)
                if root is None:
                    artifact_store.get().delete_prefix(key)
                raise
            registered.last_version = number
            registered.save(update_fields=["last_version", "updated_at"])
            if fmt == custom_model.DESIGNER:
                transaction.on_commit(lambda: send_prepare(version.id))
    return version


def _is_id(value) -> bool:
    """A whole number a database id or version can be (text of ASCII digits too)."""
    if isinstance(value, str):
        return jsontext.whole_number(value) is not None
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**63


def _sources(run: Run, node_id, port: str | None, here: contextlib.ExitStack) -> tuple[Path, Path | None, dict]:
    """(model folder, ONNX folder or None, the snapshot node) of a completed model output (with a
    bucket, downloaded for as long as `here` lasts)."""
    node = next((n for n in run.snapshot.get("nodes", []) if n.get("id") == node_id), None)
    if node is None:
        raise RegistryError(f"run {run.id} has no node {node_id!r}")
    label = lineage.label_of(node)
    if node["kind"] not in SOURCES:
        module = get_catalogue(run.owner_id).for_node(node)
        if module is not None and module.component is None:  # a built-in module other than Train and Export
            raise RegistryError(f"{label} ({node_id}) outputs no model: {NO_MODEL}")
        return _declared_model(run, node_id, label, port, here), None, node
    if port not in (None, SOURCES[node["kind"]]):
        raise RegistryError(f"{label} ({node_id}) has no output {port[:80]!r}: its model is {SOURCES[node['kind']]!r}")
    output = _completed_output(run, node_id, label, SOURCES[node["kind"]], here)
    if node["kind"] == TRAIN_KIND:
        return output, None, node
    # Export to ONNX: its ONNX graph, and the trained model it exported (its input) for the canvas and torch
    upstream, port = graph.inputs_of(run.snapshot, node_id).get("trained_model", (None, None))
    if upstream is None:
        raise RegistryError(f"{label} ({node_id}) has no trained model input in run {run.id}")
    model_dir = _completed_output(run, upstream, f"the trained model of {label}", port, here)
    source = next(n for n in run.snapshot["nodes"] if n["id"] == upstream)
    return model_dir, output, source


NO_MODEL = ("register the output of Train PyTorch Model or Export to ONNX, or a component's output declared "
            "as a model (type: custom_model, mlflow_model, ModelDirectory or OnnxModel in its component file)")


def _declared_model(run: Run, node_id: str, label: str, port: str | None, here: contextlib.ExitStack) -> Path:
    """The folder of a node's output declared as a model (a component's): `port`, or its only one."""
    outputs = _completed(run, node_id, label).outputs or {}
    models = [p for p, stored in outputs.items() if _type_of(stored) in custom_model.MODEL_TYPES]
    if port is None and len(models) != 1:
        if not models:
            raise RegistryError(f"{label} ({node_id}) outputs no model: {NO_MODEL}")
        raise RegistryError(f"{label} ({node_id}) has {len(models)} model outputs ({', '.join(models)}): "
                            "say which one with `output`")
    port = port or models[0]
    if port not in outputs:
        raise RegistryError(f"{label} ({node_id}) has no output {port[:80]!r}: its outputs are {', '.join(outputs) or 'none'}")
    if port not in models:
        raise RegistryError(f"the output {port!r} of {label} ({node_id}) is a {_type_of(outputs[port]) or 'folder'}, "
                            f"not a model: {NO_MODEL}")
    return _completed_output(run, node_id, label, port, here, _type_of(outputs[port]))


def _type_of(stored) -> str:
    try:
        return str(artifact_store.read_tree_meta(artifact_store.output_key(stored)).get("type", ""))
    except paths.OutsideFolder:
        return ""


def _completed(run: Run, node_id: str, label: str) -> NodeRun:
    nr = NodeRun.objects.filter(run=run, node_id=node_id).first()
    status = nr.status if nr else st.PENDING
    if nr is None or status not in st.SUCCEEDED:
        raise RegistryError(f"{label} ({node_id}) has not completed in run {run.id} (it is {status}): "
                            "only a completed model can be registered")
    return nr


def _completed_output(run: Run, node_id: str, label: str, port: str, here: contextlib.ExitStack,
                      expected: str | None = None) -> Path:
    stored = (_completed(run, node_id, label).outputs or {}).get(port)
    try:
        folder = here.enter_context(artifact_store.materialized(artifact_store.output_key(stored)))
    except (paths.OutsideFolder, StoreError):
        folder = None
    if folder is None or not folder.is_dir():
        raise RegistryError(f"the output of {label} ({node_id}) in run {run.id} is gone from the artifact store: "
                            "run the pipeline again to register it")
    expected = expected or (onnx_model.TYPE if port == SOURCES[EXPORT_KIND] else model_format.TYPE)
    if (read_meta(folder) or {}).get("type") != expected:
        raise RegistryError(f"the output of {label} ({node_id}) is not a {expected}")
    return folder


def _copy(model_dir: Path, onnx_dir: Path | None, folder: Path) -> None:
    if folder.exists():  # left by a registration whose transaction did not commit
        shutil.rmtree(folder)
    shutil.copytree(model_dir, folder, ignore=shutil.ignore_patterns("metrics.jsonl", "work"))
    if onnx_dir is not None:
        for name in (onnx_model.ONNX_FILE, onnx_model.PREPROCESSING_FILE):
            shutil.copyfile(onnx_dir / name, folder / name)


def _size(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


def folder_of(version: ModelVersion) -> Path:
    """Where a node reads the version: in the store's folder, or (a bucket) in a worker's cache,
    the same path on every worker (runs.artifacts.input_keys fetches it before the node starts)."""
    return paths.model_version_folder(artifact_store.trees_root(), key_of(version))


def key_of(version: ModelVersion) -> str:
    """The version's tree in the store; paths.OutsideFolder for a record naming anything but models/."""
    paths.model_version_folder("/", version.folder)
    try:
        return check_key(version.folder)
    except ValueError as e:
        raise paths.OutsideFolder(str(e)) from None


# --------------------------------------------------------------------------- packaging (on a worker)


def send_prepare(version_id: int) -> None:
    """Send the packaging task; when the broker is away, the maintenance loop sends it later."""
    try:
        app.send_task(PREPARE_VERSION, args=[version_id])
    except Exception:  # the broker is down: resend_preparing() sends it when it is back
        return
    ModelVersion.objects.filter(pk=version_id).update(prepare_sent_at=timezone.now())


def resend_preparing() -> None:
    """Versions whose packaging message was refused or lost: sent again (by the maintenance loop)."""
    due = timezone.now() - RESEND_AFTER
    for pk in ModelVersion.objects.filter(status=st.PREPARING, prepare_started_at__isnull=True).exclude(
            prepare_sent_at__gt=due).values_list("pk", flat=True)[:20]:
        send_prepare(pk)


def prepare(version_id: int, package) -> None:
    """Run `package(folder)` (training.packaging.package) once for this version; record the outcome."""
    now = timezone.now()
    claimed = (ModelVersion.objects.filter(pk=version_id, status=st.PREPARING)
               .exclude(prepare_started_at__gt=now - RECLAIM_AFTER).update(prepare_started_at=now))
    if not claimed:
        return  # done, or another worker is on it
    version = ModelVersion.objects.get(pk=version_id)
    try:
        # with a bucket: the version downloaded, packaged here, and kept again whole (manifest last)
        with artifact_store.materialized(key_of(version)) as folder:
            result = package(folder)
            if artifact_store.is_remote():
                artifact_store.get().upload_tree(key_of(version), folder)
            size = _size(folder)
    except Exception as e:  # a message the user can act on, on the models page
        ModelVersion.objects.filter(pk=version_id).update(status=st.FAILED, error=f"packaging failed: {e}")
        return
    ModelVersion.objects.filter(pk=version_id).update(status=st.READY, error="", size=size,
                                                      has_onnx=bool(result.get("has_onnx", True)))


# --------------------------------------------------------------------------- reading, deleting


def get_version(owner, name: str, number) -> ModelVersion:
    if not isinstance(name, str):
        raise RegistryError(f"`model` is a registered model's name (text), got {type(name).__name__}")
    version = (ModelVersion.objects.select_related("model").filter(model__owner=owner, model__name=name, version=number)
               .first() if _is_id(number) else None)
    if version is None:
        raise RegistryError(f"you have no model {name!r} version {number}", status=404)
    return version


def delete_version(version: ModelVersion) -> None:
    """Refused (409, naming them) while endpoints serve it; else its record goes, then its folder.
    The row is locked first: a deploy or switch to it waits, then finds it gone (endpoints.py)."""
    with transaction.atomic():
        if not ModelVersion.objects.select_for_update().filter(pk=version.pk).exists():
            return  # deleted meanwhile
        serving = list(version.endpoints.values_list("name", flat=True))
        if serving:
            names = ", ".join(repr(n) for n in serving)
            raise RegistryError(f"{version} is served by endpoint {names}: switch or delete the endpoint first", status=409)
        try:
            key = key_of(version)
        except paths.OutsideFolder:
            key = None  # not ours to remove: forget the record only
        version.delete()
        if key is not None:
            transaction.on_commit(lambda: _remove(key))
    # the name stays, with its numbering, until it has no version left
    RegisteredModel.objects.filter(pk=version.model_id, versions__isnull=True).delete()


def _remove(key: str) -> None:
    store = artifact_store.get()
    if store.local_root() is not None:
        shutil.rmtree(paths.inside(store.local_root(), key), ignore_errors=True)
        return
    try:
        store.delete_prefix(key)
    except StoreError as e:  # the store is away: its files stay, no record names them
        log.warning("could not remove %s from the store: %s", key, e)


# --------------------------------------------------------------------------- binding at submit


def bind(owner, doc: dict) -> dict:
    """Point every Registered model node at its owner's version folder (with no version given, the
    latest ready one: the run records which); PipelineInvalid for any other name or version."""
    problems = []
    for node in doc.get("nodes", []):
        if node.get("kind") != REGISTERED_MODEL_KIND:
            continue
        params = node.setdefault("parameters", {})
        params.pop("stored_folder", None)  # only ever set here
        name, number = params.get("model"), params.get("version")
        wrong = ("model", f"the model is a name (text), got {name!r}") if name is not None and not isinstance(name, str) else \
            ("version", f"the version is a whole number, got {number!r}") if number is not None and not _is_id(number) else None
        if wrong:
            problems.append(graph.Problem(f"Registered model: {wrong[1]}", "bad_value", node=node.get("id"), param=wrong[0]))
            continue
        versions = ModelVersion.objects.filter(model__owner=owner, model__name=name or "").order_by("-version")
        # no number: the latest ready version (else the latest: one being packaged has its model already)
        found = (versions.filter(version=number).first() if number is not None
                 else versions.filter(status=st.READY).first() or versions.first())
        if found is None:
            what = ("no model chosen" if not name else f"you have no registered model {name!r}" if not versions.exists()
                    else f"model {name!r} has no version {number}")
            problems.append(graph.Problem(f"Registered model: {what}", "unknown_model", node=node.get("id"),
                                          param="version" if name and versions.exists() else "model"))
            continue
        params["version"] = found.version
        params["stored_folder"] = str(folder_of(found))
    if problems:
        raise graph.PipelineInvalid(problems)
    return doc

