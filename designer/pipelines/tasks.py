"""Celery tasks: take ids, call the run logic, return. Nothing big goes through the broker."""
from celery import shared_task

from designer.pipelines import runs


@shared_task(name="designer.run_node", ignore_result=True)
def run_node(noderun_id: int) -> None:
    runs.dispatch(runs.execute_noderun(noderun_id))
