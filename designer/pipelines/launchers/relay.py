"""Rank 0's metrics file and driver log, as the node's metric and log events, while it runs.

Metrics come from the metrics file (JSON lines: training.train, sdk.script.log_metric) and from
the `##metric name=value ... [step=N]` lines of rank 0's output (sdk.formats.metrics.parse_line);
a figure without a step is numbered as it comes (sdk.formats.metrics.Steps).
Log lines become one log event per pump, of at most MAX_LINES_PER_PUMP lines: a script that
prints a million lines makes a few hundred events, not a million rows; the rest is in the file.
"""
from __future__ import annotations

from pathlib import Path

from sdk.formats.metrics import PREFIX, Follower, Steps, parse_line

MAX_LINES_PER_PUMP = 200
MAX_NOTES = 10  # malformed ##metric lines noted, at most


class Relay:
    def __init__(self, ctx, metrics_file: Path | None, rank0_log: Path, max_lines: int = MAX_LINES_PER_PUMP):
        self.ctx = ctx
        self.metrics = Follower(metrics_file)
        self.log = Follower(rank0_log)
        self.log_name = Path(rank0_log).name
        self.max_lines = max_lines
        self.notes = 0
        self.pending: list[str] = []  # notes about malformed ##metric lines, logged after the lines
        self.steps = Steps()  # a figure logged without a step is numbered as it comes

    def pump(self, final: bool = False) -> None:
        """Relay what was appended since the last pump (`final`: also a last line without its newline)."""
        shown, more = [], 0
        marker = PREFIX.encode()
        for chunk in self.log.chunks(final):
            room = max(0, self.max_lines - len(shown))
            if room == 0 and marker not in chunk:  # the common case of a chatty script: count, do not split
                more += chunk.count(b"\n") + (not chunk.endswith(b"\n"))
                continue
            lines = chunk.splitlines()
            shown += [raw.decode(errors="replace") for raw in lines[:room]]
            more += len(lines) - min(room, len(lines))
            if marker in chunk:
                self._metric_lines(raw for raw in lines if marker in raw)
        if more:
            shown.append(f"... {more} more lines: see {self.log_name}")
        shown += self.pending
        self.pending = []
        if shown:
            self.ctx.log("\n".join(f"rank 0: {line}" for line in shown))
        for m in self.metrics.metrics(final):
            self.ctx.metric(m["name"], m["value"], self.steps(m["name"], m["step"]), m["steps"])

    def _metric_lines(self, lines) -> None:
        for raw in lines:
            try:
                figures = parse_line(raw.decode(errors="replace"))
            except ValueError as e:
                if self.notes < MAX_NOTES:  # the line itself is in the log: say why it is no metric
                    self.notes += 1
                    self.pending.append(f"(designer) line ignored: {e}")
                continue
            for m in figures:
                self.ctx.metric(m["name"], m["value"], self.steps(m["name"], m["step"]), m["steps"])
