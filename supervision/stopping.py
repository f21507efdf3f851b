"""A command asked to stop early (a sweep's policy ended its trial): the stop file first, which
sdk.script.stop_requested() reads, then, once the grace has passed, the end of its processes
(supervision.command for one process, the distributed launcher for every node's); and how it ended
(sdk.context.Stopped). No torch here."""
from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path

from sdk.context import COOPERATIVE, ENDED, FINISHED, STOP_GRACE_SECONDS, Stopped
from sdk.script import seen_file


class StopRequest:
    """The engine's request that a command stop early: the stop file (which sdk.script.stop_requested()
    reads), created when `requested()` first says so; `grace` seconds later (math.inf: never), if
    the command still runs, it is `overdue`: its caller ends its processes."""

    def __init__(self, stop_file: Path | None, requested: Callable[[], bool], grace: float = STOP_GRACE_SECONDS):
        self.file, self.requested, self.grace = stop_file, requested, grace
        self.at: float | None = None  # when the stop file was created (monotonic)
        self.ended = False

    def overdue(self, say: Callable[[str], None]) -> bool:
        """Ask `requested()` until it says stop, then create the stop file; True (once) when the
        grace has passed since: the processes must be ended now (`ended` is then True)."""
        if self.file is None or self.ended:
            return False
        if self.at is None:
            if self.requested():
                self.at = time.monotonic()
                Path(self.file).parent.mkdir(parents=True, exist_ok=True)
                Path(self.file).touch()
                later = f"; it is ended if it still runs in {self.grace:g} s (stop_grace_seconds)" \
                    if math.isfinite(self.grace) else ""
                say(f"(designer) asked the command to stop early: created {self.file} (sdk.script.stop_requested()){later}")
            return False
        if time.monotonic() - self.at < self.grace:
            return False
        self.ended = True
        say(f"(designer) the command still runs {self.grace:g} s after it was asked to stop: ending it "
            "(SIGTERM, then SIGKILL); its outputs keep what it wrote")
        return True

    def outcome(self) -> Stopped | None:
        """How the command stopped, when it was asked to; None when it never was."""
        if self.file is None or self.at is None:
            return None
        after, seen = time.monotonic() - self.at, seen_file(Path(self.file)).exists()
        return Stopped(ENDED if self.ended else COOPERATIVE if seen else FINISHED, self.grace, after, seen)
