"""The metrics of a training process or a script, in their two forms.

The metrics file: JSON lines that rank 0 appends, one per figure (`append`; sdk.script.log_metric):

    <file>    {"name": "validation_loss", "value": 0.42, "step": 3, "steps": 10}
              ...

A line of output (stdout or stderr), for scripts that import nothing (`parse_line` is its one parser):

    ##metric training_loss=0.42 validation_accuracy=0.91 step=3 steps=10

The designer names the metrics file in a DistributedJob (`metrics_file`) or to a command
(supervision.command) and relays each new line as a metric of the node while the processes run,
with the `##metric` lines of the output (rank 0's only, in a distributed job). `Follower` reads
what was appended to either file since it last looked; `Steps` numbers the figures logged without
a step as they come (1, 2, 3... per name), as the original numbers `run.log(name, value)`.
"""
from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from pathlib import Path

METRICS_FILE = "metrics.jsonl"
PREFIX = "##metric"
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-/]{0,99}$")
_INTS = ("step", "steps")  # the keys of a line that are not figures


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


def is_metric_line(line: str) -> bool:
    """True for a line of the `##metric ...` form (leading blanks allowed), well formed or not."""
    text = line.lstrip()
    return text.startswith(PREFIX) and (len(text) == len(PREFIX) or text[len(PREFIX)].isspace())


def parse_line(line: str) -> list[dict]:
    """The metrics of one line of output: [{name, value, step, steps}, ...] (step and steps None
    when the line has none); [] when the line is not of the `##metric` form. A line of that form
    that is malformed raises ValueError saying which word and why (no figure of it is taken)."""
    if not is_metric_line(line):
        return []
    figures: dict[str, float] = {}
    ints: dict[str, int | None] = {"step": None, "steps": None}
    for word in line.split()[1:]:
        name, sep, text = word.partition("=")
        if not sep or not text:
            raise ValueError(f"{PREFIX}: {word!r} is not name=value")
        if name in _INTS:
            if not re.fullmatch(r"-?\d+", text):
                raise ValueError(f"{PREFIX}: {name} must be a whole number, not {text!r}")
            ints[name] = int(text)
            continue
        if not _NAME.match(name):
            raise ValueError(f"{PREFIX}: {name!r} is not a metric name (a letter or _, then letters, digits, _ . - /)")
        try:
            value = float(text)
        except ValueError:
            raise ValueError(f"{PREFIX}: the value of {name} is not a number: {text!r}") from None
        if not math.isfinite(value):
            raise ValueError(f"{PREFIX}: the value of {name} is not finite: {text!r}")
        figures[name] = value
    if not figures:
        raise ValueError(f"{PREFIX}: the line names no metric (expected {PREFIX} name=value [name=value ...] [step=N])")
    return [{"name": name, "value": value, **ints} for name, value in figures.items()]


class Steps:
    """The step of each figure relayed: its own, or for one logged without a step the next of its
    name (1, 2, 3...), so that charts and a sweep's primary metric see a curve."""

    def __init__(self):
        self.counts: dict[str, int] = {}

    def __call__(self, name: str, step: int | None) -> int:
        if step is not None:
            return step
        self.counts[name] = self.counts.get(name, 0) + 1
        return self.counts[name]


class Follower:
    """What was appended to a file since the last look, as complete lines (a line still being
    written waits for its newline, except at the `final` look). Reads at most `chunk` bytes at a
    time, so a file of a million lines costs no more memory than one of a thousand."""

    def __init__(self, path, offset: int = 0, chunk: int = 1 << 20):
        self.path = Path(path) if path else None
        self.offset = offset
        self.chunk = chunk

    def chunks(self, final: bool = False) -> Iterator[bytes]:
        """The new complete lines, a chunk of them (bytes ending with a newline) at a time."""
        if self.path is None:
            return
        try:
            f = self.path.open("rb")
        except OSError:
            return
        with f:
            while True:
                f.seek(self.offset)
                data = f.read(self.chunk)
                if not data:
                    return
                end = data.rfind(b"\n") + 1
                if end == 0 and len(data) < self.chunk and not final:
                    return  # a line being written
                if end == 0 or (final and len(data) < self.chunk):
                    end = len(data)  # a line longer than a chunk, or the last line, without its newline
                self.offset += end
                yield data[:end]

    def lines(self, final: bool = False) -> Iterator[str]:
        for chunk in self.chunks(final):
            yield from chunk.decode(errors="replace").splitlines()

    def metrics(self, final: bool = False) -> Iterator[dict]:
        """The new figures of a metrics file (JSON lines); a line that is not one is skipped."""
        for line in self.lines(final):
            try:
                m = json.loads(line)
                yield {"name": str(m["name"]), "value": float(m["value"]), "step": m.get("step"), "steps": m.get("steps")}
            except (ValueError, KeyError, TypeError):
                continue

    def metric_lines(self, final: bool = False) -> Iterator[tuple[str, list[dict] | ValueError]]:
        """The new `##metric` lines of an output log, each with its figures or why it is malformed;
        every other line is skipped without being decoded."""
        marker = PREFIX.encode()
        for chunk in self.chunks(final):
            if marker not in chunk:
                continue
            for raw in chunk.splitlines():
                if marker in raw:
                    line = raw.decode(errors="replace")
                    try:
                        yield line, parse_line(line)
                    except ValueError as e:
                        yield line, e
