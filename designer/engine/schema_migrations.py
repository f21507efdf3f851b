"""Every change of the pipeline file format, in one place.

`MIGRATIONS[n]` turns a document of schema_version n into one of version n + 1. Reading a file
walks it forward to CURRENT. A file newer than CURRENT cannot be read: it was written by a newer
Pipeline Designer.
"""
from __future__ import annotations

from collections.abc import Callable

CURRENT = 3
OLDEST = 1


def _add_parameters(doc: dict) -> dict:
    """1 -> 2: pipeline parameters (designer/engine/parameters.py); a version 1 file declares none
    and binds nothing. A new dict: the caller's document is left as it was."""
    return {**doc, "schema_version": 2, "parameters": doc.get("parameters", [])}


def _add_compute_targets(doc: dict) -> dict:
    """2 -> 3: compute targets (designer/engine/targets.py): a pipeline's default `compute_target`
    and a node's own in its run_settings. A version 2 file names none: its nodes run on any worker,
    as they did; only the version changes (a version 2 reader refuses a file naming a target)."""
    return {**doc, "schema_version": 3}


MIGRATIONS: dict[int, Callable[[dict], dict]] = {
    1: _add_parameters,
    2: _add_compute_targets,
}


class SchemaVersionError(ValueError):
    pass


def migrate(doc: dict) -> dict:
    version = doc.get("schema_version")
    if version is None:
        raise SchemaVersionError("the file has no schema_version: it is not a Pipeline Designer pipeline file")
    if not isinstance(version, int) or isinstance(version, bool):
        raise SchemaVersionError(f"schema_version must be a whole number, got {version!r}")
    if version > CURRENT:
        raise SchemaVersionError(
            f"this file has schema_version {version}, written by a newer Pipeline Designer; "
            f"this one reads schema_version {OLDEST} to {CURRENT}. Upgrade Pipeline Designer to open it."
        )
    if version < OLDEST:
        raise SchemaVersionError(
            f"this file has schema_version {version}, older than any this Pipeline Designer can read "
            f"(oldest: {OLDEST}); no migration exists from it."
        )
    while doc["schema_version"] < CURRENT:
        doc = MIGRATIONS[doc["schema_version"]](doc)
    return doc
