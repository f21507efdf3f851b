"""A pipeline's draft, one way for the API (api.py), the pages (views.py) and the commands:
create, import, clone, rename, save, delete, export; and what of a pipeline and its runs a user
may read (their own, else 404).

The revision guard: every change moves a pipeline's revision on by one. A save says which
revision it edited and is stored only if that is still the stored one, in one conditional UPDATE
(`... WHERE revision = <edited>`): the database decides, so two saves of the same revision cannot
both win, and the loser gets `Conflict` naming the stored revision, having overwritten nothing.

A rename (the pipelines list) changes no draft and so has no revision to be stale against: it
moves the revision on with an atomic increment (`revision = revision + 1` in the UPDATE), which
never loses a concurrent save's or rename's step. A designer tab still holding the old revision
is refused on its next save and told to reload, as after a save from another tab.
"""
from __future__ import annotations

import copy

from django.db.models import F
from django.shortcuts import get_object_or_404
from django.utils import timezone

from designer.engine import graph
from designer.engine.problems import labelled
from designer.engine.schema_migrations import CURRENT
from designer.pipelines.catalogue.service import get_catalogue
from designer.pipelines.compute import workers
from designer.pipelines.datasets import service as datasets
from designer.pipelines.models import NodeRun, Pipeline, Run
from designer.pipelines.registry import service as registry
from designer.pipelines.web import BadRequest

EMPTY_PIPELINE = {"schema_version": CURRENT, "parameters": [], "nodes": [], "links": [], "layout": {}}
MAX_NAME = Pipeline._meta.get_field("name").max_length
DEFAULT_NAME = "Untitled pipeline"
IMPORTED_NAME = "Imported pipeline"


class DraftError(BadRequest, ValueError):
    """A draft, document or name that cannot be stored: the message says why, `problems` (a list
    of graph.Problem, or None) lists each problem found. The API answers it as any refusal (400)."""

    def __init__(self, message: str, problems: list | None = None, status: int = 400, **extra):
        super().__init__(message, problems, status, **extra)
        self.problems = problems


class Unreadable(DraftError):
    """A document that is not a pipeline file at all (not JSON, a newer schema, a wrong shape)."""


class Conflict(DraftError):
    """A save of a revision that is no longer the stored one."""

    def __init__(self, edited: int, stored: int):
        super().__init__(
            f"this pipeline was saved elsewhere (revision {stored}) after the revision {edited} you edited; "
            "reload it to get the latest version. Nothing was overwritten.", status=409, stored_revision=stored)
        self.edited, self.stored_revision = edited, stored


def _name(*candidates) -> str:
    """The first name given (text, not empty), cut to what the database stores."""
    return next((c for c in candidates if isinstance(c, str) and c.strip()), DEFAULT_NAME)[:MAX_NAME]


def _check_name(name) -> None:
    """A name given by a user (not one read from a file): text, and short enough, as rename wants it."""
    if name is not None and not isinstance(name, str):
        raise DraftError(f"`name` is text, got {name!r}")
    if name and len(name.strip()) > MAX_NAME:
        raise DraftError(f"a name may have at most {MAX_NAME} characters (this one has {len(name.strip())})")
    if name and "\x00" in name:  # PostgreSQL's text cannot store it
        raise DraftError("a name cannot hold a NUL character (\\x00)")


# ---------------------------------------------------------------- reading (own pipelines only)


def owned(user, pk) -> Pipeline:
    return get_object_or_404(Pipeline, pk=pk, owner=user)


def node_run(user, run_pk, node_id) -> NodeRun:
    """One node of one of the user's runs (with the node it reused, if any)."""
    run = get_object_or_404(Run, pk=run_pk, owner=user)
    return get_object_or_404(NodeRun.objects.select_related("reused_from"), run=run, node_id=node_id)


def problems(draft: dict, owner) -> list:
    """A stored draft's problems (none listed if it does not even have the file's shape), with
    those Submit would find binding its Dataset and Registered model nodes to the owner's. A draft
    stored by an earlier version is read through the file format's migrations."""
    try:
        draft = graph.upgrade(draft)
    except graph.PipelineInvalid:
        return []
    if graph.schema_problems(draft):
        return []
    catalogue = get_catalogue(owner)
    draft, named = datasets.with_names_resolved(owner, draft)  # a dataset kept by name: the owner's latest of it
    seen = {(p.node, p.param) for p in named}
    found = labelled(named, draft, catalogue) + [
        p for p in graph.validate(draft, catalogue, workers.machines(), workers.targets()) if (p.node, p.param) not in seen]
    return found + _binding_problems(draft, owner, catalogue, found)


def _binding_problems(draft: dict, owner, catalogue, known: list) -> list:
    """A dataset id or model name the owner does not have (another user's, deleted, never
    registered), known before submit; none about a parameter that has a problem already."""
    seen = {(p.node, p.param) for p in known}
    found = []
    for bind in (datasets.bind, registry.bind):
        try:
            bind(owner, copy.deepcopy(draft))
        except graph.PipelineInvalid as e:
            found += [p for p in e.problems if (p.node, p.param) not in seen]
    return labelled(found, draft, catalogue)


def checked(doc, owner) -> tuple[dict, list]:
    """A draft may have semantic problems (it is being edited) but must have the right shape.
    Its component nodes are pinned to the version they are saved with (graph.pin_versions)."""
    try:
        doc = graph.upgrade(doc)
    except graph.PipelineInvalid as e:
        raise Unreadable("the pipeline cannot be read", e.problems)
    shape = graph.schema_problems(doc)
    if shape:
        raise Unreadable("the pipeline does not follow the file format", shape)
    catalogue = get_catalogue(owner)
    unstorable = graph.unstorable_problems(doc, catalogue)
    if unstorable:  # a draft may hold a wrong value, but not one the database cannot store
        raise DraftError(f"the pipeline holds {len(unstorable)} value(s) that are not numbers", unstorable)
    # a dataset kept by name (its latest version, or "name:N") is checked as the version it names now
    resolved, named = datasets.with_names_resolved(owner, doc)
    seen = {(p.node, p.param) for p in named}
    found = labelled(named, resolved, catalogue) + [
        p for p in graph.validate(resolved, catalogue, workers.machines(), workers.targets()) if (p.node, p.param) not in seen]
    return graph.pin_versions(doc, catalogue), found + _binding_problems(resolved, owner, catalogue, found)


def export_text(p: Pipeline) -> str:
    """The pipeline file (canonical form: an export imported and exported again is the same bytes)."""
    return graph.dumps({**p.draft, "name": p.name})


# ---------------------------------------------------------------- changes


def create(owner, name: str | None = None, draft=None) -> tuple[Pipeline, list]:
    """A new pipeline (empty unless `draft` is given) and its draft's problems."""
    _check_name(name)
    draft, found = checked(copy.deepcopy(EMPTY_PIPELINE) if draft is None else draft, owner)
    p = Pipeline.objects.create(owner=owner, name=_name(name, draft.get("name")), draft=draft)
    return p, found


def read_document(raw: bytes | str, what: str = "the file") -> dict:
    """A pipeline file's text, upgraded to the current schema; `what` names it in the error."""
    try:
        return graph.parse_text(raw)
    except graph.PipelineInvalid as e:
        raise Unreadable(f"{what} cannot be imported", e.problems)


def import_document(owner, doc: dict, what: str = "the file", name: str = IMPORTED_NAME) -> tuple[Pipeline, list]:
    """A new pipeline of a read document, and its problems. Like any draft it may have some (a
    dataset of another server or none chosen yet, a value to fix): it is imported, and they are
    fixed in the designer before it runs. One the database cannot hold is refused (DraftError).
    `what` names the file in that error; `name`: used when the document names none. A dataset the
    file names (examples/digits.json: "digits") becomes the owner's of that name, as if picked."""
    doc = copy.deepcopy(doc)
    named = datasets.resolve_names(owner, doc)
    try:
        draft, found = checked(doc, owner)
    except DraftError as e:
        raise type(e)(f"{what} cannot be imported: {e}", e.problems) from None
    seen = {(p.node, p.param) for p in named}  # "no dataset named 'x'" says more than "no dataset chosen"
    found = labelled(named, draft, get_catalogue(owner)) + [p for p in found if (p.node, p.param) not in seen]
    return Pipeline.objects.create(owner=owner, name=_name(doc.get("name"), name), draft=draft), found


def for_run_of_file(owner, doc: dict, name: str) -> tuple[Pipeline, bool]:
    """The saved pipeline a headless run of a pipeline file belongs to, so that it opens in the
    designer and lists in that pipeline's Runs tab like a run submitted from the canvas: the owner's
    pipeline of that name (the last saved first) whose draft has every node of the file (same id,
    same module), as an exported pipeline's has; else the file imported as a new pipeline
    (created: True). Raises DraftError for a file the database cannot hold."""
    nodes = {(n.get("id"), n.get("kind")) for n in doc.get("nodes", []) if isinstance(n, dict)}
    for p in Pipeline.objects.filter(owner=owner, name=name[:MAX_NAME]):
        draft = p.draft if isinstance(p.draft, dict) else {}
        if nodes <= {(n.get("id"), n.get("kind")) for n in draft.get("nodes", []) if isinstance(n, dict)}:
            return p, False
    return import_document(owner, copy.deepcopy({**doc, "name": name}), name=name)[0], True


def clone(p: Pipeline) -> Pipeline:
    """A new pipeline of the same owner with a copy of the draft (none of the runs)."""
    return Pipeline.objects.create(owner_id=p.owner_id, name=_name(f"{p.name} (copy)"), draft=p.draft)


def save(p: Pipeline, revision, draft=None, name: str | None = None) -> list | None:
    """Store `draft` and/or `name` if `revision` (the one the caller edited) is still the stored
    one; `p` then holds what was stored. Returns the new draft's problems (None: no new draft).
    Raises Conflict if another save or rename came first, DraftError for a draft of a wrong shape."""
    if not isinstance(revision, int) or isinstance(revision, bool):
        raise DraftError(f"`revision` must be a whole number (the revision you edited), got {revision!r}")
    if not 0 <= revision < 2**53:  # never a stored one (and revision + 1 would not fit the database)
        raise Conflict(revision, Pipeline.objects.values_list("revision", flat=True).get(pk=p.pk))
    _check_name(name)
    found = None
    # update() skips auto_now: the list of pipelines shows the last saved first
    fields = {"revision": revision + 1, "updated_at": timezone.now()}
    if draft is not None:
        fields["draft"], found = checked(draft, p.owner_id)
    if name:
        fields["name"] = _name(name)
    if not Pipeline.objects.filter(pk=p.pk, revision=revision).update(**fields):
        raise Conflict(revision, Pipeline.objects.values_list("revision", flat=True).get(pk=p.pk))
    for k, v in fields.items():  # what was stored: not read back (a big draft is megabytes of JSON)
        setattr(p, k, v)
    return found


def rename(p: Pipeline, name: str) -> None:
    """A new name (spaces around it dropped); the revision moves on by one whatever it is now."""
    name = name.strip()
    if not name:
        raise DraftError("a name cannot be empty")
    _check_name(name)
    if not Pipeline.objects.filter(pk=p.pk).update(name=name, revision=F("revision") + 1):
        raise Pipeline.DoesNotExist(f"pipeline {p.pk} was deleted")
    p.refresh_from_db(fields=["name", "revision"])


def delete(p: Pipeline) -> None:
    """The pipeline goes; its runs stay (they keep the pipeline as submitted) in the runs list."""
    p.delete()
