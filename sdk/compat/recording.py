"""What the compatibility shims share: a figure recorded through sdk.script.log_metric, and a
note in the driver log (stdout) for what the designer does not record."""
from __future__ import annotations

import math
import os
import sys

from sdk.script import METRICS_FILE_ENV, log_metric

_noted: set[str] = set()


def in_designer() -> bool:
    return bool(os.environ.get(METRICS_FILE_ENV))


def number(value) -> float | None:
    """`value` as a finite float, or None (text, a list, NaN...)."""
    if isinstance(value, str | bytes):
        return None
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def record(api: str, name: str, value, step=None) -> bool:
    """Record a figure as the node's metric; a value that is not a finite number is noted (once
    per name) instead. True when recorded."""
    x = number(value)
    if x is None:
        note_once(f"{api}:{name}", f"({api}) {name!r}: {_short(value)} is not a finite number: not recorded as a metric")
        return False
    if step is not None and (number(step) is None or int(step) != step):
        note_once(f"{api}:{name}:step", f"({api}) {name!r}: step {_short(step)} is not a whole number: numbered as it comes")
        step = None
    log_metric(str(name), x, None if step is None else int(step))
    return True


def note(text: str) -> None:
    """A line of the driver log; rank 0's only in a distributed job (one line, not one per rank)."""
    if os.environ.get("RANK", "0") == "0":
        print(text, file=sys.stdout, flush=True)


def note_once(key: str, text: str) -> None:
    if key not in _noted:
        _noted.add(key)
        note(text)


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
