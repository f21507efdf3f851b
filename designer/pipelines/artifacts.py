"""Where a node's files live in this deployment: the artifact root (settings) joined by
designer/engine/paths.py, which owns every artifact and log path and checks that it stays
inside its folder."""
from __future__ import annotations

from pathlib import Path

from django.conf import settings

from designer.engine import paths

RANKS_DIR = ("work", "ranks")  # a distributed node's per-rank state files (training.rank)


def node_dir(run_id: int, node_id: str) -> Path:
    """The node's folder, checked to be inside its run's folder (paths.OutsideFolder if not)."""
    return paths.node_dir(settings.ARTIFACT_ROOT, run_id, node_id)


def logs_dir(run_id: int, node_id: str) -> Path:
    return paths.logs_dir(node_dir(run_id, node_id))


def ranks_dir(node_folder: Path) -> Path:
    """Where the processes of a distributed node record their rank, node and failure."""
    return paths.inside(node_folder, *RANKS_DIR)
