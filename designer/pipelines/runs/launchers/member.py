"""A node other than 0 of a distributed job (the `launch_node` task, on the worker node 0 chose):
run its torchrun until it ends, or until node 0, a cancel or the end of the node's task says stop.
Its row in NodeLaunch is its only channel with node 0: status, heartbeat, exit code."""
from __future__ import annotations

import time
from pathlib import Path

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from designer.engine import statuses as st
from designer.engine.executor import DistributedLaunchError
from designer.engine.store import StoreError
from designer.pipelines.models import NodeLaunch
from designer.pipelines.runs import artifacts
from designer.pipelines.runs.launchers import base, specs
from sdk import layout
from supervision import launch


def run_member(launch_id: int) -> None:
    now = timezone.now()
    if not NodeLaunch.objects.filter(pk=launch_id, status=st.RESERVED, stop_requested=False,
                                     noderun__status=st.RUNNING).update(status=st.RUNNING, started_at=now, heartbeat_at=now):
        return  # stopped or abandoned before this task got its turn
    row = NodeLaunch.objects.select_related("noderun__run").get(pk=launch_id)
    nr = row.noderun
    # with a bucket: the node's inputs in this worker's cache while its processes run (the same paths
    # as on node 0's worker), and its processes' logs and device records into the store as they grow
    try:
        # (its launchers' log under a name of its own: node 0's worker keeps the node's 70_mpi_log.txt)
        renamed = {layout.MPI_LOG: layout.MPI_LOG.replace(".txt", f"_node{row.spec.get('node', 'n')}.txt")}
        with artifacts.fetched(artifacts.input_keys(nr)), artifacts.LogSync(nr.run_id, nr.node_id, renamed):
            _run(launch_id, row.spec)
        artifacts.tidy(nr.run_id, nr.node_id)
    except StoreError as e:  # node 0 reads why in the launchers' log, and the node fails of a lost peer
        launch.append_log(Path(row.spec["mpi_log"]), f"{row.spec.get('prefix', 'a node')}: {e}")
        NodeLaunch.objects.filter(pk=launch_id).update(status=st.EXITED, exit_code=1, finished_at=timezone.now())


def _run(launch_id: int, spec: dict) -> None:
    try:
        proc = specs.process_of(spec)
    except DistributedLaunchError as e:  # its GPUs were held by other jobs: node 0 reads why in the launchers' log
        launch.append_log(Path(spec["mpi_log"]), str(e))
        NodeLaunch.objects.filter(pk=launch_id).update(status=st.EXITED, exit_code=1, finished_at=timezone.now())
        return
    try:
        beat = time.monotonic()
        while proc.poll() is None:
            time.sleep(min(base.POLL_SECONDS, settings.HEARTBEAT_SECONDS))
            if time.monotonic() - beat < settings.HEARTBEAT_SECONDS:
                continue
            beat = time.monotonic()
            NodeLaunch.objects.filter(pk=launch_id).update(heartbeat_at=timezone.now())
            if _told_to_stop(launch_id):
                proc.log("stopping: node 0 asked to, or the run was cancelled, or the node's task ended")
                break
    finally:
        code = proc.stop()
        NodeLaunch.objects.filter(pk=launch_id).update(status=st.EXITED, exit_code=code, finished_at=timezone.now(),
                                                       heartbeat_at=timezone.now())


def _told_to_stop(launch_id: int) -> bool:
    return NodeLaunch.objects.filter(pk=launch_id).filter(
        Q(stop_requested=True) | Q(noderun__run__cancel_requested=True) | ~Q(noderun__status=st.RUNNING)).exists()
