"""Objects of a user that the API's paths of sweeps can name, for tests/pipelines/test_openapi.py's fuzzing."""
from __future__ import annotations

from designer.pipelines.authoring import drafts
from designer.pipelines.runs import service as runs
from designer.pipelines.sweeps import service as sweeps
from tests.pipes import link, node, pipeline

# two trials, one at a time: the first runs (inline, here) and scores; the second is queued
CONFIG = {"sampling": "grid", "parameter_space": [{"name": "lr", "expression": "choice", "values": [0.005, 0.01]}],
          "policy": {"type": "NoTerminationPolicy"}, "primary_metric_name": "score", "primary_metric_goal": "maximize",
          "max_total_runs": 2, "max_concurrent_runs": 1}


def objects(user) -> dict[str, dict]:
    """{first path segment after /api/: {path parameter: value}} of objects made here for `user`:
    a running sweep of a saved pipeline whose first trial ended with a score (its best so far, so
    that apply-best has values to apply) and whose second trial waits for a worker."""
    doc = pipeline([node("src", "toy_source", value=1), node("fit", "toy_tuning", epochs=2, epoch_seconds=0)],
                   [link("src", "fit")], name="swept")
    doc["parameters"] = [{"name": "lr", "type": "float", "default": 0.01, "min": 1e-9, "max": 1.0}]
    doc["nodes"][1]["bindings"] = {"learning_rate": "lr"}
    p, _ = drafts.create(user, "swept", doc)
    sweep = sweeps.start(user, p.draft, CONFIG, pipeline=p)  # its trials' runs are dispatched on commit: never, here
    first = sweep.trials.get()
    runs.run_inline(first.run_id)  # the toy nodes, in this process
    sweeps.trial_finished(first.run_id)  # what the end of its run does (signals.run_finished, on commit)
    return {"sweeps": {"pk": sweep.pk}}
