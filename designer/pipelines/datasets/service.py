"""Datasets: storing an upload, and binding the Dataset modules of a pipeline to their files.

`bind()` is the one gate between a pipeline document and a stored file: it runs when a run is
submitted, checks that every Dataset node names a dataset of the run's owner, and writes that
dataset's path into the node's `stored_file` parameter (a value already there is replaced).
Every dataset path comes from designer/engine/paths.py: an upload named `../../x.zip` is stored
as `x.zip` in its own folder, and a stored file outside its owner's folder is never used.

A pipeline file may name a Dataset node's dataset instead (`"dataset": "digits"`, as
examples/digits.json does): ids differ from one installation to the next, names are what a user
knows. `resolve_names()` turns a name into the importing user's dataset of that name, when the
file is imported or run headless; the stored draft holds the id, as if picked in the page.
"""
from __future__ import annotations

import copy
import tarfile
import tempfile
import zipfile
from pathlib import Path

from django.core.files import File
from django.db import IntegrityError, transaction

from designer.engine import graph, paths
from designer.pipelines import artifact_store
from designer.pipelines.datasets import samples
from designer.pipelines.models import Dataset

DATASET_KIND = "dataset"
ARCHIVE_SUFFIXES = (".zip", ".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tbz")


class NotAnArchive(ValueError):
    pass


class NameTaken(ValueError):
    """The owner has a dataset of that name already (`existing`); nothing was added."""

    def __init__(self, existing: Dataset):
        self.existing = existing
        super().__init__(name_taken(existing))


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


def name_of(name: str, filename: str) -> str:
    """The name a dataset is stored under: the one given, else its file's (safe) name."""
    return (name or paths.safe_filename(filename))[:200]


def same_name(owner, name: str) -> Dataset | None:
    """`owner`'s dataset of that name, if there is one. A user picks a dataset by its name (the
    palette, the Dataset module's picker): two of one name could not be told apart. Another
    user's datasets do not count."""
    return Dataset.objects.filter(owner=owner, name=name).order_by("id").first()


def name_taken(existing: Dataset, another: str = "give another name") -> str:
    return f"You already have a dataset named {existing.name!r} (dataset {existing.id}). Rename the archive, or {another}."


def store(owner, name: str, uploaded) -> Dataset:
    """Save an uploaded (Django) file as a dataset of `owner`; call check_archive first.

    NameTaken when the owner has a dataset of that name: checked first, and by the database (two
    uploads of one name at the same moment both pass the check; the second's row and file go)."""
    ds = Dataset(owner=owner, name=name_of(name, uploaded.name), size=uploaded.size)
    existing = same_name(owner, ds.name)
    if existing is not None:
        raise NameTaken(existing)
    ds.file.save(paths.safe_filename(uploaded.name), uploaded, save=False)
    try:
        with transaction.atomic():
            ds.save()
    except IntegrityError:
        ds.file.delete(save=False)
        existing = same_name(owner, ds.name)
        if existing is None:  # not the name: let the real error through
            raise
        raise NameTaken(existing) from None
    return ds


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
    """A copy of `doc` whose Dataset nodes given by name (a file's "digits") name `owner`'s dataset
    of that name by its id, as if picked; and a problem for each name the owner has none of. A
    pipeline kept with a name follows the latest dataset of that name; a run records the id."""
    doc = copy.deepcopy(doc)
    return doc, resolve_names(owner, doc)


def resolve_names(owner, doc: dict) -> list:
    """Replace a Dataset node's dataset given by name with the id of `owner`'s dataset of that name
    (in place). A name the owner has no dataset of leaves the node with none chosen, and is one of
    the problems returned, each naming the dataset that was asked for."""
    problems = []
    nodes = doc.get("nodes") if isinstance(doc, dict) else None
    for node in nodes if isinstance(nodes, list) else []:
        params = node.get("parameters") if isinstance(node, dict) and node.get("kind") == DATASET_KIND else None
        if not isinstance(params, dict) or not isinstance(params.get("dataset"), str):
            continue
        name = params["dataset"]
        found = same_name(owner, name.strip())
        params["dataset"] = found.id if found else None
        if found is None:
            hint = (f"`make run` adds the sample dataset {name!r} to admin, `manage.py add_sample_datasets --owner "
                    f"{getattr(owner, 'username', 'YOU')}` to you" if name.strip() == samples.DIGITS else "upload it under that name, or pick one of yours")
            problems.append(graph.Problem(f"Dataset: you have no dataset named {name[:200]!r} ({hint})", "unknown_dataset",
                                          node=node.get("id"), param="dataset"))
    return problems


def add_sample_digits(owner) -> tuple[Dataset, bool]:
    """`owner`'s dataset `digits` (samples.py), added if they have none of that name: (dataset, added).
    Safe to run again, and at the same time as another run of it."""
    existing = same_name(owner, samples.DIGITS)
    if existing is not None:
        return existing, False
    with tempfile.TemporaryDirectory() as tmp:
        archive = samples.digits_archive(Path(tmp) / f"{samples.DIGITS}.zip")
        with archive.open("rb") as f:
            try:
                return store(owner, samples.DIGITS, File(f, name=archive.name)), True
            except NameTaken as e:  # another run of this added it meanwhile
                return e.existing, False
