"""What a component's own script may call: its metrics and the designer's request to stop early.

    from sdk import log_metric, stop_requested

    for epoch in range(1, args.num_epochs + 1):
        ...
        log_metric("training_loss", loss, step=epoch)
        log_metric("validation_accuracy", accuracy, step=epoch)
        if stop_requested():              # a sweep's early-termination policy ended this trial
            break                         # write the outputs with the best so far, exit 0

The SDK is installed into the designer's environment (sdk/pyproject.toml), so the import works in
every command the designer runs, and wherever `pip install ./sdk` put it; outside
the designer (no DESIGNER_METRICS_FILE in the environment) log_metric does nothing and
stop_requested() is False, so the same script runs anywhere. In a distributed job only rank 0
(RANK=0) records metrics; the others' calls do nothing.

A script that must not import anything prints lines of this form instead (stdout or stderr):

    ##metric name=value [name=value ...] [step=N] [steps=N]
    ##metric training_loss=0.4213 validation_accuracy=0.91 step=3

`step`: the epoch or iteration (a whole number), shared by every figure of the line; `steps`: how
many the script means to run, when it knows (a sweep's policy then stops nothing at the last).
Names start with a letter or `_`; values are numbers. In a distributed job only rank 0's lines
count. The parser is sdk.formats.metrics.parse_line; a malformed line is noted in the log.

A script that never asks stop_requested() is not stopped at its safe point: once the sweep's
`policy.stop_grace_seconds` have passed after the request, its processes are ended (SIGTERM, then
SIGKILL) and the node keeps what the script had written to its outputs by then. stop_requested()
leaves a mark beside the stop file when it says True (`seen_file`): the designer then knows that
the script stopped because it was asked, not because it had run its course.

Environment a command runs with: DESIGNER_METRICS_FILE, DESIGNER_STOP_FILE, and for the processes
of torch.distributed MASTER_ADDR, MASTER_PORT, NODE_RANK, WORLD_SIZE, RANK, LOCAL_RANK.
"""
from __future__ import annotations

import math
import os
from pathlib import Path

from sdk.formats import metrics

METRICS_FILE_ENV = "DESIGNER_METRICS_FILE"
STOP_FILE_ENV = "DESIGNER_STOP_FILE"


def log_metric(name: str, value: float, step: int | None = None, steps: int | None = None) -> None:
    """Record one figure of the script (a point of the chart `name`, at `step`). Does nothing
    outside the designer, and on every rank but 0 of a distributed job."""
    path = os.environ.get(METRICS_FILE_ENV)
    if not path or os.environ.get("RANK", "0") != "0":
        return
    if not isinstance(name, str) or not name:
        raise ValueError(f"log_metric: the name must be a non-empty string, not {name!r}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"log_metric({name!r}): the value must be a number, not {value!r}") from None
    if not math.isfinite(number):
        raise ValueError(f"log_metric({name!r}): the value must be finite, not {value!r}")
    metrics.append(path, name, number, _whole(name, "step", step), _whole(name, "steps", steps))


def stop_requested() -> bool:
    """True when the designer asks the script to wrap up early (a sweep's policy ended the trial):
    finish the step, write the outputs with the best so far and exit 0. In a distributed job, ask
    on rank 0 and share its answer (torch.distributed.broadcast): ranks on other machines may not
    see the request."""
    path = os.environ.get(STOP_FILE_ENV)
    return asked(Path(path)) if path else False


def asked(stop_file: Path) -> bool:
    """Whether `stop_file` exists; when it does, marks that it was seen (seen_file)."""
    if not stop_file.exists():
        return False
    try:
        seen_file(stop_file).touch()
    except OSError:  # a folder it may not write: the answer still counts
        pass
    return True


def seen_file(stop_file: Path) -> Path:
    """The mark that a script saw the stop request (its stop_requested() said True): `<stop file>.seen`."""
    return stop_file.with_name(stop_file.name + ".seen")


def _whole(name: str, what: str, n) -> int | None:
    if n is None:
        return None
    try:
        if int(n) == n:
            return int(n)
    except (TypeError, ValueError):
        pass
    raise ValueError(f"log_metric({name!r}): {what} must be a whole number, not {n!r}")
