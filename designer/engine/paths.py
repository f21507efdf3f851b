"""Every artifact, log and dataset path is built here, from ONE function that checks that it
stays inside its folder.

Node ids, port names, log names and uploaded file names come from users. Joined as they are, a
node id of `..` put a node's outputs in the artifact root itself, where another user's run could
overwrite them or read them. `inside(root, *parts)` resolves the joined path (symbolic links
included) and raises OutsideFolder unless it lies strictly below `root`; the layout helpers
below are the only places that join names onto the artifact root.

Layout (ARTIFACT_ROOT):
    <run id>/<node id>/<output port>/...      a node's outputs (executor.py)
    <run id>/<node id>/logs/<log file>        its logs
    datasets/<owner id>/<upload folder>/<file name>   uploaded datasets
    models/<owner id>/<model id>/<version>/...         registered model versions (immutable copies)
    components/<owner id>/<component id>/...           uploaded components (immutable copies)
"""
from __future__ import annotations

import os
import re
import unicodedata
from pathlib import Path, PurePosixPath

from sdk import layout

# A node or link id: names a folder. Letters, digits, `_`, `-` and `.`, but never `.` or `..`
# (pipeline.schema.json says the same for the file format; graph.py reports it by name).
ID_PATTERN = r"^(?!\.\.?$)[A-Za-z0-9_.-]{1,64}$"
ID_RULE = "1 to 64 letters, digits, '_', '-' or '.', and not '.' or '..'"
LOG_DIR = layout.LOG_DIR
LOG_FILE = layout.DRIVER_LOG
DATASETS_DIR = "datasets"
NAME_MAX, PATH_MAX = 255, 4096  # bytes of one name, and of a whole path (Linux)
MODELS_DIR = "models"
COMPONENTS_DIR = "components"
MAX_FILENAME_CHARS = 150  # well under the 255 bytes most file systems allow, with a UTF-8 margin

_ID = re.compile(ID_PATTERN)


class OutsideFolder(ValueError):
    """A name would put a file outside the folder it belongs in (or names no file at all)."""


def is_safe_id(value) -> bool:
    return isinstance(value, str) and _ID.fullmatch(value) is not None


def inside(root, *parts) -> Path:
    """`root/part/...`, resolved; OutsideFolder unless it is strictly below `root` (with no
    parts: `root` itself). An absolute part replaces what precedes it, as in pathlib, so that a
    stored absolute path is checked the same way: `inside(store, "/etc/passwd")` is refused."""
    base = _resolve(Path(root), root)
    if not parts:
        return base
    shown = "/".join(str(p) for p in parts)
    if any(not isinstance(p, (str, Path)) or str(p) == "" for p in parts):
        raise OutsideFolder(f"{shown!r}: an empty name names no file in its folder .../{base.name}")
    path = _resolve(base.joinpath(*parts), shown)
    if path == base or not path.is_relative_to(base):
        raise OutsideFolder(f"{shown!r} leads outside its folder .../{base.name}")
    try:  # (a file system refuses longer names: every later look at the path would raise)
        too_long = len(os.fsencode(path)) >= PATH_MAX or any(len(os.fsencode(p)) > NAME_MAX for p in path.parts)
    except UnicodeEncodeError:
        raise OutsideFolder(f"{shown[:80]!r} is not a usable file name: not Unicode") from None
    if too_long:
        raise OutsideFolder(f"{shown[:80]!r} is not a usable file name: longer than a file system takes")
    return path


def _resolve(path: Path, shown) -> Path:
    try:
        return path.resolve()
    except (ValueError, OSError, RuntimeError) as e:  # a NUL byte, a symbolic-link loop
        raise OutsideFolder(f"{str(shown)!r} is not a usable file name: {e}") from None


# ---------------------------------------------------------------- runs


def run_dir(artifact_root, run_id: int) -> Path:
    if isinstance(run_id, bool) or not isinstance(run_id, int):
        raise OutsideFolder(f"run id {run_id!r} is not a whole number")
    return inside(artifact_root, str(run_id))


def node_dir(artifact_root, run_id: int, node_id: str) -> Path:
    """The folder of one node of one run: inside that run's folder, never the run folder itself.
    An id the schema refuses (an old stored run may hold one) is refused here too."""
    if not is_safe_id(node_id):
        raise OutsideFolder(f"node id {node_id!r} cannot name a folder: a node id is {ID_RULE}")
    return inside(run_dir(artifact_root, run_id), node_id)


def output_dir(node_folder, port: str) -> Path:
    return inside(node_folder, port)


def logs_dir(node_folder) -> Path:
    return inside(node_folder, LOG_DIR)


def log_file(logs_folder, name: str = LOG_FILE) -> Path:
    """A log file of a node, by its name relative to the node's logs folder."""
    return inside(logs_folder, name)


# ---------------------------------------------------------------- datasets


def safe_filename(name: str, default: str = "upload") -> str:
    """The last component of an uploaded file's name, fit to be a file name: no folder part
    (`../../x.zip` -> `x.zip`, `C:\\\\x.zip` -> `x.zip`), no control characters, not `.` or `..`,
    at most MAX_FILENAME_CHARS characters keeping its suffixes (`.tar.gz`)."""
    name = unicodedata.normalize("NFC", str(name or ""))
    name = re.split(r"[/\\]", name)[-1]
    name = "".join(c for c in name if unicodedata.category(c)[0] != "C").strip()
    if name.strip(".") == "":
        return default
    if len(name) > MAX_FILENAME_CHARS:
        suffix = "".join(PurePosixPath(name).suffixes[-2:])
        suffix = suffix if len(suffix) <= 16 else ""
        name = name[: MAX_FILENAME_CHARS - len(suffix)] + suffix
    return name


def dataset_name(owner_id: int, folder: str, filename: str) -> str:
    """Where an upload is stored, relative to the artifact root (Django's storage joins it):
    a folder of its own per upload under its owner's folder; the file name made safe."""
    if not is_safe_id(folder):
        raise OutsideFolder(f"upload folder {folder!r} cannot name a folder")
    return f"{DATASETS_DIR}/{int(owner_id)}/{folder}/{safe_filename(filename)}"


def dataset_file(artifact_root, owner_id: int, stored_name: str) -> Path:
    """The file of a stored dataset, only if it lies in its owner's dataset folder."""
    owner_folder = inside(artifact_root, DATASETS_DIR, str(int(owner_id)))
    return inside(owner_folder, Path(artifact_root, stored_name))


# ---------------------------------------------------------------- registered models


def model_version_dir(artifact_root, owner_id: int, model_id: int, version: int) -> Path:
    """The folder of one registered model version (ids only: a model's name never names a folder)."""
    numbers = [owner_id, model_id, version]
    if any(isinstance(n, bool) or not isinstance(n, int) for n in numbers):
        raise OutsideFolder(f"model version folder {numbers!r}: not whole numbers")
    return inside(artifact_root, MODELS_DIR, *(str(n) for n in numbers))


def model_version_folder(artifact_root, stored: str) -> Path:
    """A stored version folder (relative to the artifact root), only if it is under models/."""
    return inside(inside(artifact_root, MODELS_DIR), Path(artifact_root, stored))


# ---------------------------------------------------------------- uploaded components


def component_dir(artifact_root, owner_id: int, component_id: int) -> Path:
    """The folder of one uploaded component version (ids only: a kind never names a folder)."""
    numbers = [owner_id, component_id]
    if any(isinstance(n, bool) or not isinstance(n, int) for n in numbers):
        raise OutsideFolder(f"component folder {numbers!r}: not whole numbers")
    return inside(artifact_root, COMPONENTS_DIR, *(str(n) for n in numbers))


def component_folder(artifact_root, stored: str) -> Path:
    """A stored component folder (relative to the artifact root), only if it is under components/."""
    return inside(inside(artifact_root, COMPONENTS_DIR), Path(artifact_root, stored))
