"""designer/engine/latency.py: the histogram the serving processes store and the endpoint pages read."""
import math
import random

from designer.engine import latency


def exact(values, q):
    return sorted(values)[max(0, math.ceil(q * len(values)) - 1)]


def test_percentiles_are_within_three_percent_of_the_exact_ones():
    rng = random.Random(0)
    values = [rng.lognormvariate(2, 1) for _ in range(20_000)]  # ms: about 2 to 100
    counts = latency.empty()
    for v in values:
        latency.add(counts, v)
    for q in (0.5, 0.9, 0.95, 0.99):
        assert abs(latency.percentile(counts, q) / exact(values, q) - 1) < 0.03, q


def test_replicas_merge_into_the_same_figures_as_one_list():
    rng = random.Random(1)
    values = [rng.uniform(1, 50) for _ in range(3000)]
    one, parts = latency.empty(), [latency.empty() for _ in range(3)]
    for i, v in enumerate(values):
        latency.add(one, v)
        latency.add(parts[i % 3], v)
    assert latency.merge(parts) == one
    assert latency.merge([[], None, parts[0][:10]]) == parts[0][:10] + [0] * (latency.SIZE - 10)  # stored lists may be short


def test_extremes_and_an_empty_histogram():
    counts = latency.empty()
    assert latency.percentile(counts, 0.5) is None and latency.count(counts) == 0
    latency.add(counts, 0.0)
    latency.add(counts, 10 * 60 * 1000.0)  # ten minutes: counted as over the last bound
    assert latency.percentile(counts, 0.5) == latency.BOUNDS[0]
    assert latency.percentile(counts, 1.0) == latency.BOUNDS[-1] >= latency.LAST_MS
    assert latency.count(counts) == 2 and len(counts) == latency.SIZE
