"""Celery tasks: take ids, call the run logic, return. Nothing big goes through the broker."""
from celery import shared_task

from designer.pipelines import runs


@shared_task(name="designer.run_node", ignore_result=True)
def run_node(noderun_id: int) -> None:
    runs.dispatch(runs.execute_noderun(noderun_id))


@shared_task(name="designer.launch_node", ignore_result=True)
def launch_node(launch_id: int) -> None:
    """One node (other than node 0) of a distributed job, sent to this worker's own queue."""
    from designer.pipelines import gang

    gang.run_member(launch_id)
