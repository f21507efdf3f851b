"""How much slower this machine is than the one the suite's time budgets (tests/budget.py) and long
waits were measured on, so that a slow or crowded CI machine lengthens them instead of failing
tests that would pass given the time.

CI's machines differ: the same suite took 2,046 s and 4,345 s on two 2-core CI machines on
2026-11-28, the second failing two tests on time alone (a training waited 150 s for, a file 2% over
its budget). The measure: a fixed piece of pure-Python work, timed several times when pytest starts, the
fastest taken (a passing burst of other work does not count, a machine slow all along does), against
REFERENCE_SECONDS, what it took on the reference machine (a VM with 2 cores of an AMD EPYC at
2.45 GHz, no GPU, quiet, 2026-11-28). The ratio, at least 1 and at most MAX, scales the budgets
and `patience()`'s waits; the first process measures it and hands it to pytest-xdist's processes
(TEST_MACHINE_SLOWNESS, which also sets it by hand: 1 keeps every figure as written).

It is wall-clock time, so it counts a machine's other work too (the reference machine read 1.00
with one core kept busy, 1.61 with both, while the pass took 4% longer): it errs towards more time,
never less. The CPU time of the same work would not see a crowded machine at all (0.85 either way).
"""
from __future__ import annotations

import os
import time

import pytest

ENV = "TEST_MACHINE_SLOWNESS"
REFERENCE_SECONDS = 0.0155  # the fastest of 9 runs of _work on the reference machine (15.0-15.5 ms)
MAX = 4.0  # past 4 times slower, the machine is not one to run the suite on: budgets stop growing


def _work() -> int:
    counts: dict[int, int] = {}
    for i in range(100_000):
        counts[i % 997] = counts.get(i % 997, 0) + i * i
    return len("".join(str(i) for i in range(20_000)))


def measure(samples: int = 9) -> float:
    """This machine's time for _work against the reference machine's, between 1 and MAX."""
    fastest = float("inf")
    for _ in range(samples):
        began = time.perf_counter()
        _work()
        fastest = min(fastest, time.perf_counter() - began)
    return min(MAX, max(1.0, fastest / REFERENCE_SECONDS))


def slowness() -> float:
    """The test run's figure: given (TEST_MACHINE_SLOWNESS), or measured once and kept for the
    processes this one starts."""
    if ENV not in os.environ:
        os.environ[ENV] = f"{measure():.2f}"
    return float(os.environ[ENV])


def patience(seconds: float) -> float:
    """A wait of `seconds` on the reference machine, on this one: for waits that end on an event
    (a run finished, a status shown), so that a slow machine waits longer and a fast one no less."""
    return seconds * slowness()


def lengthen_timeouts(config, items) -> None:
    """pytest-timeout's limit of each test (its `timeout` mark, else pytest.ini's), times the
    machine's slowness (called by tests/conftest.py's pytest_collection_modifyitems)."""
    factor = slowness()
    if factor <= 1:
        return
    default = float(config.getini("timeout") or 0)
    for item in items:
        mark = item.get_closest_marker("timeout")
        seconds = float((mark.args[0] if mark.args else mark.kwargs.get("timeout", default)) if mark else default)
        if seconds > 0:
            item.add_marker(pytest.mark.timeout(seconds * factor), append=False)  # the closest mark: this one
