"""Run one module through the real executor, without Django."""
from __future__ import annotations

from pathlib import Path

from designer.engine import executor
from sdk.context import InputArtifact
from sdk.formats.meta import artifact


def run_module(module, node_dir, params=None, events=None, **inputs) -> dict[str, Path]:
    """{output port: directory}. Inputs: port name=path (read as an artifact) or an InputArtifact."""
    inputs = {k: v if isinstance(v, InputArtifact) else artifact(v) for k, v in inputs.items()}
    node = {"id": Path(node_dir).name, "kind": module.kind, "parameters": params or {}}
    out = executor.execute(module, node, inputs, Path(node_dir), (events if events is not None else []).append)
    return {k: Path(v) for k, v in out.items()}


def log_text(node_dir) -> str:
    return (Path(node_dir) / executor.LOG_DIR / executor.LOG_FILE).read_text()
