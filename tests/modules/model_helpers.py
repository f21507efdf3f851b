"""Helpers of the model-side module tests: run one module through the real executor."""
from __future__ import annotations

from pathlib import Path

from designer.engine import executor
from designer.engine.executor import InputArtifact


def run(module, node_dir: Path, params: dict | None = None, **inputs) -> tuple[dict[str, InputArtifact], list]:
    """Execute `module` like the engine does; return its outputs as InputArtifacts, and the events."""
    events = []
    outputs = executor.execute(module, {"id": node_dir.name, "kind": module.kind, "parameters": params or {}},
                               inputs, node_dir, events.append)
    return {port: artifact(path) for port, path in outputs.items()}, events


def artifact(path) -> InputArtifact:
    meta = executor.read_meta(Path(path))
    return InputArtifact(Path(path), meta.get("type", ""), meta)


def metrics(events) -> list[tuple[str, float, int]]:
    return [(e.data["name"], e.data["value"], e.data["step"]) for e in events if e.type == "metric"]
