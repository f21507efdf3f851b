"""A trial's primary metric as a script logs it (issue 29, items 2 and 3): a figure without a step
counts (numbered as it came), and a step logged twice is ranked by its last value."""
from designer.engine import statuses as st
from designer.pipelines.models import Event, Pipeline, Run
from designer.pipelines.sweeps import service as sweeps
from tests.pipes import node, pipeline


def run_with(users, *figures) -> Run:
    doc = pipeline([node("fit", "toy_add")], [])
    p = Pipeline.objects.create(owner=users["owner"], name="p", draft=doc)
    run = Run.objects.create(owner=users["owner"], pipeline=p, name="p", snapshot=doc, status=st.COMPLETED)
    for value, step in figures:
        Event.objects.create(run=run, node_id="fit", type="metric", data={"name": "best_val_acc", "value": value, "step": step})
    return run


def test_the_last_value_of_a_step_is_the_trials(users):
    run = run_with(users, (0.7, 1), (0.8, 1), (0.85, 2), (0.9, 2))  # inside the validation loop, then after it
    assert sweeps.primary_curve(run, "best_val_acc") == [(1, 0.8), (2, 0.9)]


def test_figures_without_a_step_are_numbered_as_they_came(users):
    run = run_with(users, (0.6, None), (0.9, None), (0.7, None))
    assert sweeps.primary_curve(run, "best_val_acc") == [(1, 0.6), (2, 0.9), (3, 0.7)]
