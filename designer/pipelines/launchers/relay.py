"""Rank 0's metrics file and driver log, as the node's metric and log events, while it runs."""
from __future__ import annotations

import json
from pathlib import Path


class Relay:
    def __init__(self, ctx, metrics_file: Path | None, rank0_log: Path):
        self.ctx = ctx
        self.files = {"metrics": metrics_file, "log": rank0_log}
        self.offsets = {"metrics": 0, "log": 0}

    def pump(self) -> None:
        for what, path in self.files.items():
            for line in self._new_lines(what, path):
                if what == "log":
                    self.ctx.log(f"rank 0: {line}")
                else:
                    m = json.loads(line)
                    self.ctx.metric(m["name"], m["value"], m.get("step"), m.get("steps"))

    def _new_lines(self, what: str, path: Path | None) -> list[str]:
        if path is None or not Path(path).exists():
            return []
        with Path(path).open("rb") as f:
            f.seek(self.offsets[what])
            data = f.read()
        complete = data[: data.rfind(b"\n") + 1]
        self.offsets[what] += len(complete)
        return complete.decode(errors="replace").splitlines()
