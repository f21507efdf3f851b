"""Datasets: storing an upload as the next version of its name, binding the Dataset modules of a
pipeline to their files, recording which version each run read, and refusing to delete a version
that a run or a registered model depends on.

A name is a data asset; each upload of a name is its next version (1, 2, 3...), one row of
Dataset whose id names that version for good. A Dataset node's `dataset` is:

- an id (what the page's picker keeps): that version, pinned;
- a name (`"digits"`, as examples/digits.json has it): the latest version of that name when the
  run is submitted (or validated);
- a name and a version (`"digits:2"`): that version of that name, pinned.

`resolve_names()` turns a name into the id it stands for at that moment; a run's snapshot holds
the id, and `record_uses()` keeps which version each of its Dataset nodes read (the Data page's
lineage). `bind()` is the one gate between a pipeline document and a stored file: it runs when a
run is submitted, checks that every Dataset node names a dataset of the run's owner, and writes
that dataset's path into the node's `stored_file` parameter (a value already there is replaced).
Every dataset path comes from designer/engine/paths.py: an upload named `../../x.zip` is stored
as `x.zip` in its own folder, and a stored file outside its owner's folder is never used.
"""
from __future__ import annotations

import copy
import io
import re
import tarfile
import tempfile
import zipfile
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from django.core.files import File
from django.db import IntegrityError, transaction
from django.db.models import Max

from designer.engine import graph, paths
from designer.engine.store import NotInStore, StoreError
from designer.pipelines import artifact_store
from designer.pipelines.datasets import contents, samples
from designer.pipelines.models import Dataset, DatasetName, DatasetUse, ModelVersion, Run

DATASET_KIND = "dataset"
ARCHIVE_SUFFIXES = (".zip", ".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tbz")


class NotAnArchive(ValueError):
    pass


class InUse(ValueError):
    """A version that runs or registered models depend on; nothing was deleted."""

    def __init__(self, ds: Dataset, runs: list, models: list):
        self.runs, self.models = runs, models
        super().__init__(in_use_message(ds, runs, models))


SHOWN = 5  # dependents named in a refusal; the rest counted


def check_archive(fileobj, filename: str) -> None:
    """Raise NotAnArchive unless the file is a zip or tar archive, by name and by content."""
    supported = ", ".join(ARCHIVE_SUFFIXES)
    if not filename.lower().endswith(ARCHIVE_SUFFIXES):
        raise NotAnArchive(f"{filename} is not an archive of images: upload a {supported} file")
    fileobj.seek(0)
    try:
        if filename.lower().endswith(".zip"):
            ok = zipfile.is_zipfile(fileobj)
        else:
            try:
                with tarfile.open(fileobj=fileobj, mode="r:*") as t:
                    t.next()
                ok = True
            except (tarfile.TarError, EOFError, OSError):
                ok = False
    finally:
        fileobj.seek(0)
    if not ok:
        raise NotAnArchive(f"{filename} is named like an archive but its content is not one ({supported})")


def base_name(filename: str) -> str:
    """An archive's name without its archive extension ("pets.tar.gz" -> "pets"), as the pages name an upload."""
    safe = paths.safe_filename(filename)
    suffix = next((s for s in sorted(ARCHIVE_SUFFIXES, key=len, reverse=True) if safe.lower().endswith(s)), "")
    return safe[:len(safe) - len(suffix)] or safe


def name_of(name: str, filename: str) -> str:
    """The name a dataset is stored under: the one given, else its file's (safe) name."""
    return (name or paths.safe_filename(filename))[:200]


def latest(owner, name: str) -> Dataset | None:
    """`owner`'s latest version of the dataset `name`, if there is one (another user's do not count)."""
    return Dataset.objects.filter(owner=owner, name=name).order_by("-version").first()


def versions_of(owner, name: str) -> list[Dataset]:
    return list(Dataset.objects.filter(owner=owner, name=name).order_by("-version"))


PINNED = re.compile(r"^(?P<name>.+):(?P<version>[0-9]{1,9})$")  # (a longer number is no version the database holds)


def by_reference(owner, text: str) -> tuple[Dataset | None, str]:
    """(the dataset, "") that `text` names among `owner`'s: a name (its latest version), or
    "name:N" (version N); else (None, why). A name that holds ":N" itself is read as a name first."""
    text = text.strip()
    if "\x00" in text:  # PostgreSQL's text cannot hold it: no dataset is named so
        return None, "a dataset's name holds no NUL character (\\x00)"
    found = latest(owner, text)
    if found is not None:
        return found, ""
    m = PINNED.match(text)
    if m and Dataset.objects.filter(owner=owner, name=m["name"]).exists():
        found = Dataset.objects.filter(owner=owner, name=m["name"], version=int(m["version"])).first()
        if found is not None:
            return found, ""
        have = ", ".join(str(v) for v in Dataset.objects.filter(owner=owner, name=m["name"])
                         .order_by("version").values_list("version", flat=True)[:20])
        return None, f"your dataset {m['name'][:200]!r} has no version {m['version'][:20]} (its versions: {have})"
    hint = (f"`make run` adds the sample dataset {text!r} to admin, `manage.py add_sample_datasets --owner "
            f"{getattr(owner, 'username', 'YOU')}` to you" if text == samples.DIGITS else "upload it under that name, or pick one of yours")
    return None, f"you have no dataset named {text[:200]!r} ({hint})"


def store(owner, name: str, uploaded) -> Dataset:
    """Save an uploaded (Django) file as the next version of `owner`'s dataset `name` (version 1
    for a new name); call check_archive first. What the archive holds is read from its listing
    here (contents.py). The number comes from the name's DatasetName, locked while it is given:
    two uploads of one name at the same moment get two numbers, and a deleted version's number is
    never given again."""
    ds = Dataset(owner=owner, name=name_of(name, uploaded.name), size=uploaded.size)
    uploaded.seek(0)
    ds.contents = contents.summarize(uploaded, uploaded.name)
    uploaded.seek(0)
    ds.file.save(paths.safe_filename(uploaded.name), uploaded, save=False)
    try:
        with transaction.atomic():
            ds.version = _next_version(owner, ds.name)
            ds.save()
    except BaseException:
        ds.file.delete(save=False)  # no record, no file
        raise
    return ds


def _next_version(owner, name: str) -> int:
    """The next version number of `owner`'s dataset `name`, taken (inside a transaction)."""
    try:
        with transaction.atomic():
            entry, _ = DatasetName.objects.select_for_update().get_or_create(owner=owner, name=name)
    except IntegrityError:  # another upload of a new name made it meanwhile
        entry = DatasetName.objects.select_for_update().get(owner=owner, name=name)
    # (a version stored without its DatasetName, by an admin or a test, still counts)
    top = Dataset.objects.filter(owner=owner, name=name).aggregate(top=Max("version"))["top"] or 0
    entry.last_version = max(entry.last_version, top) + 1
    entry.save(update_fields=["last_version"])
    return entry.last_version


def record_uses(run: Run, doc: dict) -> None:
    """Keep which version each Dataset node of `run` (its bound snapshot `doc`) read."""
    uses = {}
    for node in doc.get("nodes", []):
        ds = (node.get("parameters") or {}).get("dataset") if node.get("kind") == DATASET_KIND else None
        if isinstance(ds, int) and not isinstance(ds, bool):
            uses[str(node["id"])] = ds
    DatasetUse.objects.bulk_create(DatasetUse(run=run, dataset_id=ds, node_id=node) for node, ds in uses.items())


def runs_with_nodes(ds: Dataset) -> list[tuple[Run, str]]:
    """(run, its Dataset node) for each node of a run that read this version, newest run first;
    a deleted run (hidden until its files go, runs/retention.py) no longer counts."""
    uses = (DatasetUse.objects.filter(dataset=ds, run__deleted_at__isnull=True).select_related("run", "run__pipeline")
            .order_by("-run_id", "node_id"))
    return [(u.run, u.node_id) for u in uses]


def runs_using(ds: Dataset) -> list[Run]:
    """The runs that read this version, newest first (each once)."""
    return list({r.id: r for r, _ in runs_with_nodes(ds)}.values())


def models_using(ds: Dataset) -> list[ModelVersion]:
    """The registered model versions whose lineage names this version among their training or
    validation data (kept when their run is deleted)."""
    found = []
    for v in ModelVersion.objects.filter(model__owner_id=ds.owner_id).select_related("model"):
        groups = (v.lineage or {}).get("datasets") or {}
        ids = {d.get("id") for g in groups.values() if isinstance(g, list) for d in g if isinstance(d, dict)}
        if ds.id in ids:
            found.append(v)
    return found


def in_use_message(ds: Dataset, runs: list, models: list) -> str:
    def some(items, what):
        shown = ", ".join(what(x) for x in items[:SHOWN])
        return shown + (f" and {len(items) - SHOWN} more" if len(items) > SHOWN else "")

    parts = []
    if runs:
        parts.append(f"{len(runs)} run(s) used it ({some(runs, lambda r: f'run {r.id} {r.name!r}')}): delete them first")
    if models:
        parts.append(f"{len(models)} registered model version(s) were trained on it "
                     f"({some(models, lambda v: f'{v.model.name}:{v.version}')}): delete them first")
    return f"Dataset {ds.name!r} version {ds.version} is not deleted: " + "; ".join(parts) + "."


def stored_path(ds: Dataset) -> Path:
    """The dataset's file where a node reads it: in the store's folder, or (a bucket) in a worker's
    cache, the same path on every worker; paths.OutsideFolder unless it is in its owner's dataset folder."""
    base = artifact_store.trees_root()
    return paths.dataset_file(base, ds.owner_id, ds.file.name)


def open_file(ds: Dataset):
    """The dataset's file, open for reading (a download streams it a piece at a time)."""
    paths.dataset_file("/", ds.owner_id, ds.file.name)  # in its owner's folder, or OutsideFolder
    return artifact_store.get().open(ds.file.name)


def delete(ds: Dataset) -> None:
    """Delete this version and its stored archive; InUse (naming them) while a run or a
    registered model depends on it."""
    runs, models = runs_using(ds), models_using(ds)
    if runs or models:
        raise InUse(ds, runs, models)
    DatasetUse.objects.filter(dataset=ds).delete()  # those of deleted runs, whose rows wait for their files to go
    try:
        paths.dataset_file("/", ds.owner_id, ds.file.name)
        ours = True
    except paths.OutsideFolder:
        ours = False  # not ours to remove: forget the record only
    if ours and artifact_store.is_remote():
        artifact_store.get().delete_prefix(ds.file.name.rpartition("/")[0])
    elif ours:
        path = stored_path(ds)
        path.unlink(missing_ok=True)
        try:
            path.parent.rmdir()  # the upload's own folder, now empty
        except OSError:
            pass
    ds.delete()


def bind(owner, doc: dict) -> dict:
    """Point every Dataset node at its owner's stored file; PipelineInvalid for any other id."""
    doc = copy.deepcopy(doc)  # the caller's document (a stored draft) never holds a path
    problems = []
    for node in doc.get("nodes", []):
        if node.get("kind") != DATASET_KIND:
            continue
        params = node.setdefault("parameters", {})
        params.pop("stored_file", None)  # only ever set here
        dataset_id = params.get("dataset")
        found = None
        if isinstance(dataset_id, int) and not isinstance(dataset_id, bool):
            found = Dataset.objects.filter(pk=dataset_id, owner=owner).first()
        if found is None:
            what = "no dataset chosen" if dataset_id is None else f"you have no dataset with id {dataset_id!r}"
            problems.append(graph.Problem(f"Dataset: {what}", "unknown_dataset", node=node.get("id"), param="dataset"))
            continue
        try:
            params["stored_file"] = str(stored_path(found))
        except paths.OutsideFolder:
            problems.append(graph.Problem(f"Dataset: the file of dataset {dataset_id} is not in its owner's folder",
                                          "unknown_dataset", node=node.get("id"), param="dataset"))
    if problems:
        raise graph.PipelineInvalid(problems)
    return doc


def with_names_resolved(owner, doc: dict) -> tuple[dict, list]:
    """A copy of `doc` whose Dataset nodes given by name (a file's "digits", or "digits:2") name
    `owner`'s dataset version by its id, as if picked; and a problem for each name the owner has
    none of. A pipeline kept with a name follows the latest version of it; a run records the id."""
    doc = copy.deepcopy(doc)
    return doc, resolve_names(owner, doc)


def resolve_names(owner, doc: dict) -> list:
    """Replace a Dataset node's dataset given by name with the id of the version of `owner`'s
    dataset it names now (in place). A name the owner has no dataset of leaves the node with none
    chosen, and is one of the problems returned, each naming the dataset that was asked for."""
    problems = []
    nodes = doc.get("nodes") if isinstance(doc, dict) else None
    for node in nodes if isinstance(nodes, list) else []:
        params = node.get("parameters") if isinstance(node, dict) and node.get("kind") == DATASET_KIND else None
        if not isinstance(params, dict) or not isinstance(params.get("dataset"), str):
            continue
        found, why = by_reference(owner, params["dataset"])
        params["dataset"] = found.id if found else None
        if found is None:
            problems.append(graph.Problem(f"Dataset: {why}", "unknown_dataset", node=node.get("id"), param="dataset"))
    return problems


def add_sample_digits(owner) -> tuple[Dataset, bool]:
    """`owner`'s dataset `digits` (samples.py), added if they have none of that name: (dataset, added).
    Safe to run again, and at the same time as another run of it."""
    existing = latest(owner, samples.DIGITS)
    if existing is not None:
        return existing, False
    with tempfile.TemporaryDirectory() as tmp:
        archive = samples.digits_archive(Path(tmp) / f"{samples.DIGITS}.zip")
        with archive.open("rb") as f:
            ds = store(owner, samples.DIGITS, File(f, name=archive.name))
    if ds.version > 1:  # another run of this added it meanwhile: keep the first
        earlier = Dataset.objects.filter(owner=owner, name=samples.DIGITS).order_by("version").first()
        delete(ds)
        return earlier, False
    return ds, True


@contextmanager
def opened(ds: Dataset):
    """The dataset's stored archive, open for reading and seekable: a file of the store's folder, or
    (a bucket) ranged reads of the object, so that a zip's listing and one member are all that is
    fetched. paths.OutsideFolder unless it is in its owner's folder; NotInStore when it is gone."""
    paths.dataset_file("/", ds.owner_id, ds.file.name)
    store = artifact_store.get()
    if artifact_store.is_remote():
        size = store.size(ds.file.name)
        if size is None:
            raise NotInStore(f"no object {ds.file.name[:200]!r}")
        f: BinaryIO = io.BufferedReader(contents.StoredFile(store, ds.file.name, size), 256 * 1024)
    else:
        f = store.open(ds.file.name)
    with f:
        yield f


def contents_of(ds: Dataset) -> dict:
    """What the version's archive holds: kept at upload; read from the stored archive (and not
    kept: a page never writes) for one uploaded before it was kept."""
    if ds.contents:
        return ds.contents
    try:
        with opened(ds) as f:
            return contents.summarize(f, ds.filename)
    except (OSError, paths.OutsideFolder, StoreError) as e:
        return {"error": f"the archive cannot be read now ({type(e).__name__})"}


def thumbnail(ds: Dataset, index: int) -> bytes:
    """A PNG thumbnail of the version's `index`th preview image; contents.NotPreviewable saying why not."""
    preview = contents_of(ds).get("preview") or []
    if not 0 <= index < len(preview):
        raise contents.NotPreviewable(f"dataset {ds.name!r} version {ds.version} has no preview image {index}")
    try:
        with opened(ds) as f:
            return contents.thumbnail(f, ds.filename, preview[index]["name"])
    except (OSError, paths.OutsideFolder, StoreError) as e:
        raise contents.NotPreviewable(f"the archive cannot be read now ({type(e).__name__})") from None
