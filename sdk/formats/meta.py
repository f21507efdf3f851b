"""The `_meta.yaml` of every output port folder: its port type and the fields the module set.

    <port dir>/_meta.yaml
        type: ImageDirectory          # the port type (sdk.declarations), written by the engine
        classes: [cat, dog]           # ...then whatever the module set with ctx.set_meta(port, ...)
        count: 120
"""
from __future__ import annotations

from pathlib import Path

import yaml

from sdk.context import InputArtifact
from sdk.layout import META_FILE

__all__ = ["META_FILE", "read_meta", "write_meta", "artifact"]


def read_meta(directory) -> dict:
    """The fields of a folder's _meta.yaml; {} when it has none."""
    meta_path = Path(directory) / META_FILE
    if not meta_path.exists():
        return {}
    return yaml.safe_load(meta_path.read_text()) or {}


def write_meta(directory, port_type: str, extra: dict | None = None) -> None:
    meta = {"type": port_type, **(extra or {})}
    (Path(directory) / META_FILE).write_text(yaml.safe_dump(meta, sort_keys=False))


def artifact(directory):
    """An InputArtifact for a folder given by its path alone (what a training process receives)."""
    meta = read_meta(directory)
    return InputArtifact(Path(directory), meta.get("type", ""), meta)
