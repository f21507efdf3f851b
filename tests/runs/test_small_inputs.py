"""Issue 31: nothing small costs much. Small inputs to the sweeps API and to a run's parameters
that once cost gigabytes, a 500 or a traceback in torch: each is a named 400 at once, the web
process's memory (tracemalloc: the same code as under daphne) growing by a few MB at most."""
import json
import time
import tracemalloc

import pytest

from designer.pipelines.models import Pipeline, Sweep
from tests.pipes import node, pipeline

pytestmark = pytest.mark.django_db

CONFIG = """sampling: random
parameter_space:
  - {name: lr, expression: choice, values: [0.1, 0.01]}
primary_metric_name: score
primary_metric_goal: maximize
max_total_runs: 2
"""


@pytest.fixture
def swept(users):
    doc = pipeline([node("a", "toy_tuning")], [])
    doc["parameters"] = [{"name": "lr", "type": "float", "default": 0.01}, {"name": "epochs", "type": "int", "default": 1},
                         {"name": "size", "type": "int", "default": 16}]
    doc["nodes"][0]["bindings"] = {"learning_rate": "lr", "epochs": "epochs", "batch_size": "size"}
    return Pipeline.objects.create(owner=users["owner"], name="p", draft=doc)


def post_sweep(client, p, text):
    """The answer, the CPU seconds the request took (this process's: the test client answers in it,
    so another job keeping the machine's cores busy does not count) and the peak of memory it allocated."""
    tracemalloc.start()
    started = time.process_time()
    try:
        r = client.post("/api/sweeps", json.dumps({"pipeline": p.id, "config_yaml": text}), content_type="application/json")
    finally:
        seconds, (_, peak) = time.process_time() - started, tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return r, seconds, peak


def problem(r) -> dict:
    assert r.status_code == 400 and r["Content-Type"] == "application/json", (r.status_code, r.content[:300])
    problems = r.json()["problems"]
    assert len(problems) == 1, problems
    return problems[0]


def test_an_alias_bomb_of_ten_billion_values_is_a_400_naming_its_field(owner_client, swept):
    bomb = "l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
        f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]\n" for i in range(1, 10))
    r, seconds, peak = post_sweep(owner_client, swept, CONFIG.replace("sampling: random\n", bomb + "sampling: *l9\n"))
    print(f"\nalias bomb (10^10 values, {len(bomb)} bytes): 400 in {seconds * 1000:.0f} ms, peak {peak / 2**20:.1f} MB")
    found = problem(r)
    assert found["field"] == "sampling" and "stands for more than 100,000 values" in found["message"], found
    assert seconds < 2.0 and peak < 20 * 2**20 and len(r.content) < 2000
    assert not Sweep.objects.exists()


def test_a_grid_of_27_million_points_is_a_400_naming_its_size(owner_client, swept):
    grid = CONFIG.replace("sampling: random", "sampling: grid").replace(
        "  - {name: lr, expression: choice, values: [0.1, 0.01]}\n",
        "".join(f"  - {{name: {n}, expression: choice, values: [{', '.join(str(i + 1) for i in range(300))}]}}\n"
                for n in ("lr", "epochs", "size")))
    r, seconds, peak = post_sweep(owner_client, swept, grid)
    print(f"\ngrid of 27,000,000 points ({len(grid) / 1024:.1f} KB): 400 in {seconds * 1000:.0f} ms, peak {peak / 2**20:.1f} MB")
    found = problem(r)
    assert found["field"] == "parameter_space" and "the grid has 27,000,000 points (300 x 300 x 300 choices)" in found["message"]
    assert seconds < 2.0 and peak < 20 * 2**20


def test_a_duration_of_1e10_minutes_and_a_key_given_twice_are_400s_naming_them(owner_client, swept):
    found = problem(post_sweep(owner_client, swept, CONFIG + "max_duration_minutes: 1e10\n")[0])
    assert found["field"] == "max_duration_minutes" and "at most 525,600 (a year), got 1e+10" in found["message"], found
    found = problem(post_sweep(owner_client, swept, CONFIG + "max_total_runs: 5\n")[0])
    assert found["field"] == "max_total_runs" and found["message"] == "max_total_runs (line 7): declared twice (lines 6 and 7)"
    assert not Sweep.objects.exists()


def test_a_learning_rate_of_1e308_is_a_400_naming_the_parameter(owner_client, users):
    doc = pipeline([node("a", "toy_tuning", learning_rate=1e308)], [])
    p = Pipeline.objects.create(owner=users["owner"], name="lr", draft=doc)
    r = owner_client.post(f"/api/pipelines/{p.id}/runs", "{}", content_type="application/json")
    assert r.status_code == 400, r.content[:300]
    texts = [x["text"] for x in r.json()["problems"]]
    assert texts == ["Toy tuning, parameter 'learning_rate': Learning rate: 1e+308 is out of range: a number here is "
                     "between -1e+12 and 1e+12"], texts
