"""Rank 0's metrics, from its metrics file and its driver log, as the node's metric events while it runs.

Metrics come from the metrics file (JSON lines: training.train, sdk.script.log_metric) and from
the `##metric name=value ... [step=N]` lines of rank 0's output (sdk.formats.metrics.parse_line);
a figure without a step is numbered as it comes (sdk.formats.metrics.Steps).
The log lines themselves stay in the rank's log file, which the Log pane lists and tails (logs
are stored once): the relay reads them only for `##metric` lines, a chunk at a time, and a chunk
without the marker is skipped unsplit (a script printing a million lines costs a read, no rows).
A malformed `##metric` line is said in the node's log (why it is no metric), at most MAX_NOTES times.
"""
from __future__ import annotations

from pathlib import Path

from sdk.formats.metrics import PREFIX, Follower, Steps, parse_line

MAX_NOTES = 10  # malformed ##metric lines noted, at most


class Relay:
    def __init__(self, ctx, metrics_file: Path | None, rank0_log: Path):
        self.ctx = ctx
        self.metrics = Follower(metrics_file)
        self.log = Follower(rank0_log)
        self.notes = 0
        self.steps = Steps()  # a figure logged without a step is numbered as it comes

    def pump(self, final: bool = False) -> None:
        """Relay what was appended since the last pump (`final`: also a last line without its newline)."""
        marker = PREFIX.encode()
        for chunk in self.log.chunks(final):
            if marker in chunk:
                self._metric_lines(raw for raw in chunk.splitlines() if marker in raw)
        for m in self.metrics.metrics(final):
            self.ctx.metric(m["name"], m["value"], self.steps(m["name"], m["step"]), m["steps"])

    def _metric_lines(self, lines) -> None:
        for raw in lines:
            try:
                figures = parse_line(raw.decode(errors="replace"))
            except ValueError as e:
                if self.notes < MAX_NOTES:  # the line itself is in the log: say why it is no metric
                    self.notes += 1
                    self.ctx.log(f"(designer) rank 0's line ignored: {e}")
                continue
            for m in figures:
                self.ctx.metric(m["name"], m["value"], self.steps(m["name"], m["step"]), m["steps"])
