"""What checking a sweep's configuration needs in each of its parts (sweep_config, sweep_arguments,
sweep_text): a problem that says where it is, the error naming them all, and the collector
that each check adds its problems to; how a user's value is quoted in a message."""
from __future__ import annotations

import difflib
import math
import sys
from dataclasses import dataclass
from typing import TypeGuard

from designer.engine.graph import Problem
from sdk.yamltext import short


@dataclass(frozen=True)
class SweepProblem(Problem):
    """A Problem whose message already says where it is (`policy.slack_factor: ...`); `field` is
    that place, for a form to mark it."""
    field: str | None = None

    def __str__(self) -> str:
        return self.message


class SweepConfigInvalid(ValueError):
    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


def kind_of(value) -> str:
    if value is None:
        return "empty"
    return {bool: "a boolean", str: "a string", list: "a list", dict: "a mapping"}.get(type(value)) or short(value)


def is_number(value) -> TypeGuard[float]:  # a YAML `true` is no number, nor an integer past every float
    return isinstance(value, float) and math.isfinite(value) or type(value) is int and abs(value) <= sys.float_info.max


def is_whole(value) -> TypeGuard[float]:  # 2.0 too
    return is_number(value) and float(value).is_integer()


def fmt(value) -> str:
    """A user's value as a message quotes it: bounded (sdk.yamltext.short), whatever it holds."""
    if isinstance(value, bool):
        return str(value).lower()
    return f"{value:g}" if isinstance(value, float) else short(value)


def name_of(text: str) -> str:
    """A name the user wrote, as a message shows it (at most 80 characters)."""
    return text if len(text) <= 80 else text[:77] + "..."


one_of = ", ".join


class Checker:
    """Collects every problem; each check returns the checked value, or None when it has a problem."""

    def __init__(self):
        self.problems: list[Problem] = []

    def add(self, field: str, message: str, code: str, param: str | None = None, where: str | None = None) -> None:
        self.problems.append(SweepProblem(f"{where or field}: {message}", code, param=param, field=field))

    def unknown_keys(self, raw: dict, known: tuple, prefix: str = "", owner: str = "a sweep") -> None:
        for key in raw:
            if key not in known and not (prefix and key == "type"):
                close = difflib.get_close_matches(name_of(str(key)), known, n=1)
                hint = f"did you mean {close[0]}?" if close else f"{owner} takes " + (one_of(known) or "no other key")
                self.add(f"{prefix}{name_of(str(key))}", f"unknown key ({hint})", "unknown_key")

    def whole(self, raw: dict, key: str, low: int, high: int | None = None, prefix: str = "", why: str = ""):
        value, field = raw.get(key), prefix + key
        if not is_whole(value):
            return self.add(field, f"must be a whole number, got {fmt(value)}", "not_a_number")
        if value < low or (high is not None and value > high):
            why = why or f"must be at least {low}" + (f" and at most {high}" if high is not None else "")
            return self.add(field, why, "out_of_range", where=f"{field} is {fmt(value)}")
        return int(value)
