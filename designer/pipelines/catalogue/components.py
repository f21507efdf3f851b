"""Uploaded components: a user's component file and its code, kept as one immutable version.

`store()` takes what the page or the API received: one archive (.zip, .tar.gz/.tgz, .tar), or the
files of a folder (a browser's folder input sends each file with its path relative to the folder
chosen; Django keeps only the last part of a file's name, so the paths come in a field of their
own), or a component.yaml alone. It unpacks them into a staging folder under the owner's
components folder, member by member (sdk/archives.py reads the archive; never an extractall): no
member may leave the folder (an absolute path, `..`), links and devices are refused, and the
unpacked bytes and files are counted against the limits while they are written, so that an
archive lying about its sizes stops at the limit. It then finds the one component.yaml, loads it
with sdk.component (every problem refused with its file, field and reason, the file named as it
is in the upload, never where the server keeps it), refuses a kind of a built-in module or of a
component of the settings folders and a version the owner already has, and only then makes the
row and renames the staging folder to the version's folder. A refusal leaves no file and no row.
"""
from __future__ import annotations

import contextlib
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from django.conf import settings
from django.db import IntegrityError, transaction

from designer import limits
from designer.engine import paths
from designer.engine import statuses as st
from designer.engine.store import StoreError
from designer.pipelines import artifact_store
from designer.pipelines.catalogue import service as catalogue
from designer.pipelines.models import Component, NodeRun
from designer.pipelines.models import components as component_models
from modules import _component
from sdk import archives, azure_component
from sdk import component as component_file

ARCHIVE_SUFFIXES = (".zip", ".tar.gz", ".tgz", ".tar")
COMPONENT_FILE = "component.yaml"
MAX_FILES = 2000  # files of one component (its code folder too)
MAX_ENTRIES = 2 * MAX_FILES  # members of its archive: files, folders, and those skipped (__MACOSX...)
SKIPPED_TOP = {"__MACOSX"}  # the resource forks macOS's Finder adds to a zip
CHUNK = 1024 * 1024
PERMISSION = component_models.PERMISSION
PERMISSION_NAME = "Can add component"


class Refused(ValueError):
    """Why an upload is not a component; `status` is the HTTP status the API answers with."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


may_add = component_models.may_run_components  # one permission: to add components and to run them


def store(owner, uploaded: list, names: list[str] | None = None) -> Component:
    """Keep an upload as a new version of one of `owner`'s components; Refused says why not.

    `uploaded`: Django uploaded files (or any objects with .name and .chunks()); `names`: the
    path of each in its folder (a folder upload), the files' own names when absent."""
    if not uploaded:
        raise Refused("send an archive of the component folder (.zip, .tar.gz, .tgz, .tar), its files, or its component.yaml")
    root = artifact_store.get().local_root()  # with a bucket: unpacked in a temporary folder, then uploaded
    owner_dir = paths.inside(root, paths.COMPONENTS_DIR, str(owner.id)) if root is not None else None
    if owner_dir is not None:
        owner_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".upload-", dir=owner_dir))
    try:
        shown = _unpack(uploaded, names, staging)
        yaml_path = _component_file(staging, shown)
        spec = _load(yaml_path, staging)
        _check_kind(owner, spec, yaml_path.relative_to(staging).as_posix())
        return _keep(owner, staging, yaml_path)
    finally:
        shutil.rmtree(staging, ignore_errors=True)  # already renamed when kept


# ---------------------------------------------------------------- unpacking


@dataclass
class _Budget:
    """The unpacked bytes and files so far, against the limits."""

    what: str
    files: int = 0
    size: int = 0
    entries: int = 0

    def add_entry(self) -> None:
        """Any member of an archive (file, folder, one skipped): a listing of millions is refused."""
        self.entries += 1
        if self.entries > MAX_ENTRIES:
            raise Refused(f"{self.what} holds more than {MAX_ENTRIES:,} entries (files and folders): a component is its "
                          "component.yaml and its code")

    def add_file(self, rel: PurePosixPath) -> None:
        self.files += 1
        if self.files > MAX_FILES:
            raise Refused(f"{self.what} holds more than {MAX_FILES} files: a component is its component.yaml and its code")

    def add_bytes(self, n: int) -> None:
        self.size += n
        limit = settings.COMPONENT_MAX_UPLOAD_BYTES
        if self.size > limit:
            raise Refused(f"{self.what} is larger than the limit of {limits.size_text(limit)} once unpacked "
                          "(setting COMPONENT_MAX_UPLOAD_MB)", status=413)


def _unpack(uploaded: list, names: list[str] | None, staging: Path) -> str:
    """Write the upload into `staging`; what the user uploaded, as messages name it."""
    if names is not None and len(names) != len(uploaded):
        raise Refused(f"{len(uploaded)} files came with {len(names)} paths: send one 'paths' value per file, in order")
    first = uploaded[0]
    if len(uploaded) == 1 and first.name.lower().endswith(ARCHIVE_SUFFIXES):
        _unpack_archive(first, staging, _Budget(first.name))
        return first.name
    if len(uploaded) == 1 and names is None and first.name != COMPONENT_FILE:
        raise Refused(f"{first.name} is neither an archive ({', '.join(ARCHIVE_SUFFIXES)}) nor a {COMPONENT_FILE}: "
                      "upload the component's folder, an archive of it, or its component.yaml")
    names = names or [f.name for f in uploaded]
    tops = {n.replace("\\", "/").lstrip("/").split("/")[0] for n in names}
    shown = f"the folder {tops.pop()}" if len(tops) == 1 and len(names) > 1 else "the files sent"
    budget = _Budget(shown)
    for f, name in zip(uploaded, names):
        rel = member_path(name, shown)
        if rel is not None:
            budget.add_file(rel)
            _write(iter(f.chunks()), staging, rel, budget)
    return shown


def member_path(name: str, what: str) -> PurePosixPath | None:
    """A member's path inside the upload's folder; None for one to skip; Refused when it would
    leave the folder."""
    try:
        rel = archives.inside_path(name)
    except archives.Outside as e:
        raise _outside(e, what) from None
    return None if rel is None or rel.parts[0] in SKIPPED_TOP else rel


def _outside(e: archives.Outside, what: str) -> Refused:
    if e.absolute:
        return Refused(f"{what}: member {e.name!r} has an absolute path: every file must stay inside the component's folder")
    return Refused(f"{what}: member {e.name!r} leads outside the component's folder ('..')")


def _write(chunks, staging: Path, rel: PurePosixPath, budget: _Budget) -> None:
    try:
        target = paths.inside(staging, *rel.parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "xb") as out:
            for chunk in chunks:
                budget.add_bytes(len(chunk))
                out.write(chunk)
    except paths.OutsideFolder as e:
        raise Refused(f"{budget.what}: member {rel.as_posix()!r}: {e}") from None
    except FileExistsError:
        raise Refused(f"{budget.what}: {rel.as_posix()!r} appears twice (or as a file and a folder)") from None
    except OSError as e:
        raise Refused(f"{budget.what}: {rel.as_posix()!r} could not be written: {e.strerror or e}") from None


def _unpack_archive(uploaded, staging: Path, budget: _Budget) -> None:
    """Every member of the archive (sdk/archives.py reads it) written into `staging`, or Refused."""
    kind = "zip" if uploaded.name.lower().endswith(".zip") else "tar"
    uploaded.seek(0)
    try:
        with archives.members(uploaded, uploaded.name, MAX_ENTRIES) as listing:
            for member in listing:
                budget.add_entry()
                _member(member, staging, budget)
    except archives.TooMany as e:
        raise Refused(f"{budget.what} {e}: a component is its component.yaml and its code") from None
    except archives.Outside as e:
        raise _outside(e, budget.what) from None
    except archives.Unreadable as e:
        if e.member is not None:
            raise Refused(f"{budget.what}: member {e.member!r} cannot be read: {e}") from None
        raise Refused(f"{budget.what} is named like a {kind} archive but is not one: {e}") from None


def _member(member: archives.Member, staging: Path, budget: _Budget) -> None:
    rel = member_path(member.name, budget.what)
    if rel is None:
        return
    if member.kind == archives.FOLDER:
        _mkdir(staging, rel, budget)
        return
    if member.kind == archives.LINK:
        kind = "hard" if member.hard else "symbolic"
        to = f" (to {member.link!r})" if member.link else ""
        raise Refused(f"{budget.what}: member {member.name!r} is a {kind} link{to}: links are refused, "
                      "archive the file itself")
    if member.kind != archives.FILE:
        raise Refused(f"{budget.what}: member {member.name!r} is not a regular file (a device, a pipe...)")
    budget.add_file(rel)
    _write(member.chunks(CHUNK), staging, rel, budget)


def _mkdir(staging: Path, rel: PurePosixPath, budget: _Budget) -> None:
    try:
        paths.inside(staging, *rel.parts).mkdir(parents=True, exist_ok=True)
    except (paths.OutsideFolder, OSError) as e:
        raise Refused(f"{budget.what}: folder {rel.as_posix()!r} could not be made: {e}") from None


# ---------------------------------------------------------------- the component file


def _component_file(staging: Path, shown: str) -> Path:
    """The one component.yaml of the upload (looked for below a single top folder too); where there
    is none, its one Azure ML v2 command component file (train.yml: sdk/azure_component.py's is_v2_file)."""
    found = sorted(staging.rglob(COMPONENT_FILE)) or sorted(p for p in staging.rglob("*.y*ml") if azure_component.is_v2_file(p))
    if not found:
        raise Refused(f"{shown} holds no {COMPONENT_FILE}: a component is a folder with its {COMPONENT_FILE} "
                      "(kind, label, version, command, ports, params) and its code")
    if len(found) > 1:
        listed = ", ".join(p.relative_to(staging).as_posix() for p in found[:5])
        raise Refused(f"{shown} holds {len(found)} {COMPONENT_FILE} files ({listed}): upload one component at a time")
    return found[0]


def _load(yaml_path: Path, staging: Path):
    """The spec; Refused naming the file as the upload has it (never the server's folder)."""
    def hide(text: str) -> str:
        return text.replace(f"{staging}/", "").replace(str(staging), ".")

    try:
        return component_file.load(yaml_path)
    except component_file.ComponentError as e:
        where = Path(e.file) if e.file else yaml_path
        shown = where.relative_to(staging).as_posix() if where.is_relative_to(staging) else where.name
        problems = getattr(e, "problems", None) or [(e.field, e.reason)]
        raise Refused("\n".join(f"{shown}: {field}: {hide(str(reason))}" for field, reason in problems)) from None
    except (OSError, ValueError) as e:
        raise Refused(f"{yaml_path.relative_to(staging).as_posix()}: {hide(str(e))}") from None


def _check_kind(owner, spec, shown: str) -> None:
    site = catalogue.get_catalogue().get(spec.kind)
    if site is not None:
        what = "a component of the settings folders" if getattr(site, "component", None) is not None else "a built-in module"
        raise Refused(f"{shown}: kind: {spec.kind!r} is the kind of {what} ({site.label}): choose another kind")
    if Component.objects.filter(owner=owner, kind=spec.kind, version=spec.version).exists():
        raise Refused(duplicate(spec.kind, spec.version))


def duplicate(kind: str, version: int) -> str:
    return f"version {version} of {kind} exists: raise `version` in {COMPONENT_FILE}"


def _keep(owner, staging: Path, yaml_path: Path) -> Component:
    """The row and the version's folder (the staging folder renamed), both or neither."""
    rel = yaml_path.relative_to(staging)
    with transaction.atomic():
        spec = component_file.load(yaml_path)
        try:
            with transaction.atomic():
                row = Component.objects.create(owner=owner, kind=spec.kind, version=spec.version, label=spec.label,
                                               category=spec.category, folder="", file=rel.as_posix())
        except IntegrityError:  # the same version sent twice at once
            raise Refused(duplicate(spec.kind, spec.version)) from None
        key = paths.component_dir("/", owner.id, row.id).relative_to(Path("/").resolve()).as_posix()
        root = artifact_store.get().local_root()
        if root is not None:
            final = paths.inside(root, key)
            shutil.rmtree(final, ignore_errors=True)  # left by a row rolled back after its rename
            staging.rename(final)
        else:  # a bucket: uploaded (its manifest last), read from this machine's cache as a worker reads it
            artifact_store.get().upload_tree(key, staging)
            final = artifact_store.cache_trees() / key
        try:
            with artifact_store.held([key]):
                spec = component_file.load(final / rel)  # its files where they stay: the digest and origin see these
            row.digest = spec.digest()
            row.declaration = _component.component_module(spec, origin="uploaded").describe()
            row.folder = key
            row.save(update_fields=["digest", "declaration", "folder"])
        except BaseException:
            _remove_files(key)
            raise
    return row


def user_of(row: Component):
    """A run of the owner, not over, with a node that runs this version (it would lose its code
    mid-run), or None."""
    active = (NodeRun.objects.filter(run__owner_id=row.owner_id, kind=row.kind, status__in=st.ACTIVE)
              .select_related("run").order_by("run_id"))
    for nr in active:
        node = next((n for n in nr.run.snapshot.get("nodes", []) if n.get("id") == nr.node_id), {})
        if node.get("version", row.version) == row.version:
            return nr.run
    return None


def remove(row: Component) -> None:
    """Forget a version and its files (only inside the components folder). Refused (409) while a
    run that is not over runs it."""
    run = user_of(row)
    if run is not None:
        raise Refused(f"version {row.version} of {row.kind} runs in run #{run.pk} '{run.name}' ({run.status}): "
                      f"delete the version once that run is over (or cancel it)", status=409)
    try:
        key = row.folder if row.folder and paths.component_folder("/", row.folder) else None
    except paths.OutsideFolder:
        key = None  # not ours to remove: forget the record only
    row.delete()
    if key is not None:
        _remove_files(key)


def _remove_files(key: str) -> None:
    root = artifact_store.get().local_root()
    if root is not None:
        shutil.rmtree(paths.inside(root, key), ignore_errors=True)
    else:
        with contextlib.suppress(StoreError):  # the store is away: the files stay, no record names them
            artifact_store.get().delete_prefix(key)
