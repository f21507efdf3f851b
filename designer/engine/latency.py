"""Latency histograms: a list of counts over fixed, log-spaced buckets (plain Python).

The serving process (designer/serving/stats.py) adds each request's latency to its own list and
stores it in EndpointStats.latency; the web app merges the lists of every replica and reads the
percentiles from the sum. Every list has len(BOUNDS) + 1 counts: bucket i holds the latencies
in (BOUNDS[i-1], BOUNDS[i]] milliseconds, the first one everything up to BOUNDS[0], the last one
everything over BOUNDS[-1].

Consecutive bounds differ by RATIO (5%), and a percentile is read as the geometric middle of its
bucket: within 2.5% of the true value between FIRST_MS and LAST_MS.
"""
from __future__ import annotations

import bisect
import math

FIRST_MS = 0.05
LAST_MS = 120_000.0  # two minutes: slower requests all count as "over two minutes"
RATIO = 1.05
BOUNDS: tuple[float, ...] = tuple(FIRST_MS * RATIO ** i for i in range(int(math.log(LAST_MS / FIRST_MS, RATIO)) + 2))
SIZE = len(BOUNDS) + 1


def empty() -> list[int]:
    return [0] * SIZE


def bucket(ms: float) -> int:
    """The index of the bucket that counts a latency of `ms` milliseconds."""
    return bisect.bisect_left(BOUNDS, ms)


def add(counts: list[int], ms: float, n: int = 1) -> None:
    counts[bucket(ms)] += n


def merge(histograms) -> list[int]:
    """The sum of several lists (a stored list may be empty or shorter: missing buckets count 0)."""
    total = empty()
    for counts in histograms:
        for i, c in enumerate((counts or [])[:SIZE]):
            total[i] += int(c)
    return total


def count(counts) -> int:
    return sum(counts or [])


def percentile(counts, q: float) -> float | None:
    """The latency (ms) under which a fraction `q` (0..1) of the requests fall; None when empty."""
    n = count(counts)
    if not n:
        return None
    rank = max(1, math.ceil(q * n))
    seen = 0
    for i, c in enumerate(counts):
        seen += c
        if seen >= rank:
            return middle(i)
    return middle(len(counts) - 1)


def middle(i: int) -> float:
    """The value a bucket stands for: the geometric middle of its bounds (the first and the last
    buckets, open on one side, stand for their one bound)."""
    if i <= 0:
        return BOUNDS[0]
    if i >= len(BOUNDS):
        return BOUNDS[-1]
    return math.sqrt(BOUNDS[i - 1] * BOUNDS[i])
