"""Celery tasks: take ids, call the run logic, return. Nothing big goes through the broker.
Loading them loads the workers' heartbeat (heartbeat.py connects it to the worker's signals)."""
from celery import shared_task

from designer.celery import LAUNCH_NODE, PREPARE_VERSION, RUN_NODE
from designer.pipelines import heartbeat  # noqa: F401 - heartbeat: connects the worker's signals
from designer.pipelines.registry import service as registry
from designer.pipelines.runs import service as runs
from designer.pipelines.runs.launchers.member import run_member


@shared_task(name=RUN_NODE, ignore_result=True)
def run_node(noderun_id: int) -> None:
    runs.dispatch(runs.execute_noderun(noderun_id))


@shared_task(name=LAUNCH_NODE, ignore_result=True)
def launch_node(launch_id: int) -> None:
    """One node (other than node 0) of a distributed job, sent to this worker's own queue."""
    run_member(launch_id)


@shared_task(name=PREPARE_VERSION, ignore_result=True)
def prepare_version(version_id: int) -> None:
    """A registered version's torch.export program and ONNX graph (the torch side, on a worker)."""
    from training import packaging  # the torch side: loaded by the worker that runs this only

    registry.prepare(version_id, packaging.package)
