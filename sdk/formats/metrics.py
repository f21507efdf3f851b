"""The metrics file of a training process: JSON lines that rank 0 appends, one per figure.

    <file>    {"name": "validation_loss", "value": 0.42, "step": 3}
              ...

A distributed module names this file in its DistributedJob (`metrics_file`): the designer relays
each new line as a metric of the node while the processes run.
"""
from __future__ import annotations

import json
from pathlib import Path

METRICS_FILE = "metrics.jsonl"


def append(path, name: str, value: float, step: int | None) -> None:
    with open(path, "a") as f:
        f.write(json.dumps({"name": name, "value": value, "step": step}) + "\n")


def read(path) -> list[dict]:
    path = Path(path)
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
