"""A run whose module waits for an identical module of another run says so by the module's label."""
from designer.engine import statuses
from designer.pipelines.models import NodeRun, Pipeline, Run
from designer.pipelines.runs import service as runs
from tests.pipes import chain


def test_a_waiting_module_is_named_by_its_label(users):
    owner = users["owner"]
    doc = chain(2)
    p = Pipeline.objects.create(owner=owner, name="p", draft=doc)
    first = Run.objects.create(owner=owner, pipeline=p, name="p", snapshot=doc, status=statuses.RUNNING)
    twin = NodeRun.objects.create(run=first, node_id="n1", kind="toy_add", status=statuses.RUNNING)
    second = Run.objects.create(owner=owner, pipeline=p, name="p", snapshot=doc, status=statuses.QUEUED)
    NodeRun.objects.create(run=second, node_id="n0", kind="toy_source", status=statuses.REUSED)
    NodeRun.objects.create(run=second, node_id="n1", kind="toy_add", status=statuses.PENDING, waits_for=twin)

    message = runs.waiting_message(second)
    assert message.startswith(f"Toy add waits for the identical module of run {first.id} (n1), which is running")
    assert "'n1'" not in message
