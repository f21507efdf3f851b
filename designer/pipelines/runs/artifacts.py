"""Where a node's files live in this deployment: the artifact root (settings) joined by
designer/engine/paths.py, which owns every artifact and log path and checks that it stays
inside its folder."""
from __future__ import annotations

import json
from pathlib import Path

from django.conf import settings

from designer.engine import paths
from sdk import layout
from sdk.formats.meta import read_meta

RANKS_DIR = ("work", "ranks")  # a distributed node's per-rank state files (supervision.rank)


def node_dir(run_id: int, node_id: str) -> Path:
    """The node's folder, checked to be inside its run's folder (paths.OutsideFolder if not)."""
    return paths.node_dir(settings.ARTIFACT_ROOT, run_id, node_id)


def logs_dir(run_id: int, node_id: str) -> Path:
    return paths.logs_dir(node_dir(run_id, node_id))


def devices_of(run_id: int, node_id: str, limit: int = 64) -> list[dict]:
    """The device each process of a training used, by rank (sdk.layout.DEVICES_DIR: small JSON
    files that the training writes); at most `limit`, each read only when it is small."""
    folder = node_dir(run_id, node_id) / layout.DEVICES_DIR
    found = []
    for f in sorted(folder.glob(layout.DEVICES_GLOB))[:limit] if folder.is_dir() else []:
        try:
            if f.stat().st_size <= 4096:
                info = json.loads(f.read_text(encoding="utf-8"))
                if isinstance(info, dict):
                    found.append({k: info[k] for k in ("rank", "worker", "device", "gpu", "gpu_memory_gib", "text")
                                  if k in info})
        except (OSError, ValueError):
            continue
    return sorted(found, key=lambda d: d.get("rank") if isinstance(d.get("rank"), int) else 0)


def ranks_dir(node_folder: Path) -> Path:
    """Where the processes of a distributed node record their rank, node and failure."""
    return paths.inside(node_folder, *RANKS_DIR)


def kept_epoch(outputs: dict) -> int | None:
    """The epoch whose model a node's outputs hold, when they say so (Train PyTorch Model keeps the
    epoch of lowest validation loss, `best_epoch`, not its last); None otherwise."""
    for folder in (outputs or {}).values():
        try:
            epoch = read_meta(folder).get("best_epoch") if folder else None
        except (OSError, ValueError, AttributeError):  # unreadable, or not a mapping: no answer
            continue
        if isinstance(epoch, int) and not isinstance(epoch, bool) and epoch > 0:
            return epoch
    return None
