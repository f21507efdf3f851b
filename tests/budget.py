"""A time budget per test file, so that a slow new test is noticed by its author, not by CI's limit.

Each file's time is the sum of its tests' setup, call and teardown (a module's fixtures, a worker
started once for the file, count in its first test's setup and its last one's teardown). At the
end of the session a file over its budget fails the run: pytest exits non-zero, naming the file,
its time and its budget. The 10 slowest files are listed with their budgets at every run.

A file's budget is DEFAULT_SECONDS unless BUDGETS below names it. Budgets hold on a busy 2-core CI
machine (about twice an idle machine's time). A subset of a file (-k, -x, a single test) only
takes less time than the whole file, so the check never fires on a subset that the whole file
would pass. To raise a budget, add or change the file's line in BUDGETS with the reason (what the
file does that takes the time); better, make the file faster (docs/contributing/tests.md).

TEST_BUDGET_SCALE multiplies every budget (`make test` sets 1.5: its two passes side by side; 0
turns the check off), and so does the slowness of the machine (tests/machine.py: 2 on a machine
that takes twice the reference machine's time), which the summary prints.
"""
from __future__ import annotations

import os
from collections import defaultdict

import pytest

from tests import machine

DEFAULT_SECONDS = 240

# file -> (seconds, reason). Times are the embedded pass's on a busy 2-core machine; the
# production pass runs fewer tests of each file, on PostgreSQL and Redis.
BUDGETS: dict[str, tuple[int, str]] = {
    "tests/training/test_sweep_digits.py": (1200, "digits sweeps: distributed real trainings side by side"),
    "tests/training/test_distributed_training.py": (1200, "real distributed trainings of 6 epochs, and their accuracy"),
    "tests/e2e/test_digits_example.py": (600, "the digits example trained in the browser"),
    "tests/sweeps/test_sweeps.py": (600, "27 toy sweeps on two real workers: early termination by each policy"),
    "tests/runs/test_cancel.py": (600, "cancelling real trainings and distributed jobs at each stage"),
    "tests/runs/test_distributed.py": (480, "18 distributed jobs of real torchrun processes on two workers"),
    "tests/modules/test_train_pytorch_model.py": (480, "real trainings of small models"),
    "tests/training/test_finetune.py": (360, "fine-tuning real models"),
    "tests/e2e/test_registry_pages.py": (360, "a training, its packaging on a worker and a serving process, in the browser"),
    "tests/e2e/test_digits_by_drag_and_drop.py": (360, "a digits pipeline built by drag and drop, then trained"),
    "tests/e2e/test_object_store.py": (360, "two workers in mount namespaces of their own on a bucket, started twice: "
                                            "a pipeline across them, a 2 x 1 job, placement by locality"),
    "tests/store/test_registry_on_a_bucket.py": (300, "a digits training, its packaging and a serving process, on a bucket"),
}


def is_subtest(report: pytest.TestReport) -> bool:
    """A report of one part of a test (schemathesis reports each API operation it fuzzes so, inside
    the test's own call; pytest 9's subtests too): counted once, in the test's time."""
    return bool(getattr(report, "_schemathesis_subtest", False)) or type(report).__name__ == "SubtestReport"


def estimate(path: str) -> float:
    """What a file is expected to take, for pytest-xdist's units (tests/conftest.py): half its
    budget if BUDGETS names it, else a short file's time."""
    return BUDGETS[path][0] / 2 if path in BUDGETS else 30


class FileBudget:
    def __init__(self, scale: float, slowness: float = 1.0):
        self.scale, self.slowness = scale, slowness
        self.seconds: dict[str, float] = defaultdict(float)

    def budget(self, path: str) -> float:
        return BUDGETS.get(path, (DEFAULT_SECONDS, ""))[0] * self.scale * self.slowness

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if not is_subtest(report):  # a subtest's time is already in its test's
            self.seconds[report.nodeid.split("::")[0]] += report.duration

    def over(self) -> list[tuple[str, float, float]]:
        return [(path, took, self.budget(path)) for path, took in self.seconds.items()
                if self.scale and took > self.budget(path)]

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self.over() and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if not self.seconds:
            return
        tr = terminalreporter
        tr.section("slowest test files (time budget: tests/budget.py)")
        tr.write_line(f"this machine took {self.slowness:.2f} times the reference machine's time for tests/machine.py's work "
                      f"(at least 1): the budgets below (x {self.scale:g} besides) and long waits are that much longer")
        for path, took in sorted(self.seconds.items(), key=lambda x: -x[1])[:10]:
            tr.write_line(f"{took:8.1f} s of {self.budget(path):6.0f} s  {path}")
        for path, took, budget in self.over():
            tr.write_line(f"OVER BUDGET: {path} took {took:.0f} s, its budget is {budget:.0f} s: make it faster, "
                          "or raise its budget in tests/budget.py with the reason", red=True, bold=True)


def register(config: pytest.Config) -> None:
    scale = float(os.environ.get("TEST_BUDGET_SCALE", "1"))
    config.pluginmanager.register(FileBudget(scale, machine.slowness()), "file-budget")
