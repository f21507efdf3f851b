"""The metrics file of a training process: JSON lines that rank 0 appends, one per figure.

    <file>    {"name": "validation_loss", "value": 0.42, "step": 3, "steps": 10}
              ...

A distributed module names this file in its DistributedJob (`metrics_file`): the designer relays
each new line as a metric of the node while the processes run.
"""
from __future__ import annotations

import json
from pathlib import Path

METRICS_FILE = "metrics.jsonl"


def append(path, name: str, value: float, step: int | None, steps: int | None = None) -> None:
    """`steps`: how many steps the process means to run (a sweep's policy stops nothing at the last)."""
    line = {"name": name, "value": value, "step": step, **({"steps": steps} if steps is not None else {})}
    with open(path, "a") as f:
        f.write(json.dumps(line) + "\n")


def read(path) -> list[dict]:
    path = Path(path)
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
