"""Node 0's side of a distributed node: Node count x Process count per node across the workers.

One worker = one node. The worker that runs the node's task is node 0: it reserves Node count - 1
other live, idle workers (reservation.py), records one NodeLaunch per node (specs.py), starts
PyTorch's launcher (torchrun, c10d rendezvous hosted at node 0) itself and sends each other worker
a `launch_node` task on that worker's own queue (member.py runs it there). From then on the
database is the only channel: every node writes a heartbeat to its row, node 0 watches the rows,
and a node stops its torchrun when its row asks it to, when the run is cancelled or when the
node's task is no longer running. A job that cannot start fails within seconds with the reason
in its error and in the launchers' log (explain.py). A job asked to stop early (a sweep's policy)
gets its stop file; one that says how long it may take (DistributedJob.stop_grace: a component's
command) and still runs after that is ended on every node, and completes as stopped, not failed.
"""
from __future__ import annotations

import math
import shutil
import time

from django.conf import settings
from django.utils import timezone

from designer.celery import LAUNCH_NODE, app, host_queue
from designer.engine import statuses as st
from designer.engine.executor import DistributedLaunchError
from designer.pipelines.compute import workers
from designer.pipelines.models import NodeLaunch, NodeRun
from designer.pipelines.runs.launchers import base, explain, specs
from designer.pipelines.runs.launchers.gang import Gang
from designer.pipelines.runs.launchers.ports import PortClaim, pick_port
from designer.pipelines.runs.launchers.relay import Relay
from designer.pipelines.runs.launchers.reservation import reserve_nodes
from sdk import layout
from sdk.context import Stopped
from sdk.errors import CommandTimedOut
from supervision import command, launch, rank
from supervision.stopping import StopRequest


def launcher_for(noderun_id: int):
    """The `launcher` the executor hands to a distributed module (NodeContext.launch_distributed)."""

    def launch_job(ctx, job) -> Stopped | None:
        launcher = DistributedLauncher()
        base.supervise(launcher, base.Step(noderun_id, ctx, job), ctx.check_cancelled)
        return launcher.stop.outcome() if launcher.stop is not None else None

    return launch_job


class DistributedLauncher(base.Launcher):
    Failure = DistributedLaunchError

    def __init__(self):
        self.gang: Gang | None = None
        self.local: launch.NodeProcess | None = None
        self.relay: Relay | None = None
        self.port: PortClaim | None = None
        self.stop: StopRequest | None = None
        self.started = time.monotonic()

    # ------------------------------------------------------------ launch

    def launch(self, step: base.Step) -> None:
        nr = NodeRun.objects.select_related("run").get(pk=step.noderun_id)
        gang = self.gang = Gang.of(nr, workers.this_process(), step.ctx)
        shutil.rmtree(gang.state_dir, ignore_errors=True)
        for old in gang.logs.glob(layout.DRIVER_LOG_GLOB):
            old.unlink()
        gang.say(f"{gang.label}: Node count {gang.n} x Process count per node {gang.p} = {gang.n * gang.p} processes")
        self.relay = Relay(step.ctx, step.job.metrics_file, gang.logs / layout.driver_log(0))
        grace = getattr(step.job, "stop_grace", None)
        self.stop = StopRequest(step.job.stop_file, step.ctx.stop_requested, math.inf if grace is None else grace)
        try:
            nodes = reserve_nodes(gang)
            self.port = pick_port(gang)  # claimed on this machine until the job ends
            self._start(step.job, nodes, self.port.port)
        except DistributedLaunchError as e:
            gang.say(str(e))
            raise
        self.started = time.monotonic()

    def _start(self, job, nodes, port: int) -> None:
        gang = self.gang
        endpoint = f"{nodes[0].address or nodes[0].hostname}:{port}"
        backend = 'NCCL on GPUs' if specs.uses_gpus(job, nodes) else 'Gloo on CPUs'
        if getattr(job, "per_node", False):
            gang.say(f"per-node launch: one command per node, which starts its {gang.p} process(es); "
                     f"MASTER_ADDR:MASTER_PORT {endpoint} (node 0); {backend}")
        else:
            gang.say(f"rendezvous (c10d) at {endpoint}, id {gang.rendezvous_id}; {backend}")
        gang.logs.mkdir(parents=True, exist_ok=True)
        launches = []
        for index, node in enumerate(nodes):
            now = timezone.now() if index == 0 else None
            launches.append(NodeLaunch.objects.create(
                noderun=gang.nr, index=index, worker=node if node.pk else None, spec=specs.node_spec(gang, job, nodes, index, endpoint),
                status=st.RUNNING if index == 0 else st.RESERVED, started_at=now, heartbeat_at=now))
        self.local = specs.process_of(launches[0].spec)
        for row in launches[1:]:
            app.send_task(LAUNCH_NODE, args=[row.pk], queue=host_queue(row.worker.hostname))
            gang.say(f"sent node {row.index} to worker {row.worker.hostname}")

    # ------------------------------------------------------------ check health

    def check_health(self, step: base.Step) -> base.Health:
        self.relay.pump()
        if self._timed_out(step.job):
            self.terminate(step)
            self.relay.pump(final=True)
            text = f"{self.gang.label}: ran past its Timeout of {command.seconds(step.job.timeout)} s and was ended"
            self.gang.say(f"{text} (every process of every node)")
            return base.Health(False, text, CommandTimedOut)  # as one process's timeout: not a launch failure
        code = self.local.poll()
        members = self.gang.members()
        late = [m for m in members if m.status == st.RESERVED
                and time.monotonic() - self.started > settings.DISTRIBUTED_START_SECONDS]
        failed = [m for m in members if m.status == st.EXITED and m.exit_code != 0]
        # a rank here failed of the script's own error: the job fails now, rather than after torchrun's
        # restarts, which would end at once (supervision.rank)
        script_failed = (self.gang.state_dir / rank.SCRIPT_FAILED).is_file()
        if explain.lost_members(members) or late or failed or script_failed or code not in (None, 0):
            self.terminate(step)
            self.relay.pump(final=True)
            text = explain.failure(self.gang, late, self.local.poll())
            self.gang.say(text)
            return base.Health(False, text)
        if code == 0 and all(m.status == st.EXITED for m in members):
            self.relay.pump(final=True)
            self.gang.say("every node finished")
            self._release_port()
            return base.DONE
        if self.stop.overdue(self.gang.say):  # rank 0 reads the stop file after its epoch, and every rank stops there
            self.terminate(step)
            self.relay.pump(final=True)
            self.gang.say(f"every process of every node was ended {command.seconds(self.stop.grace)} s after the stop request")
            return base.DONE
        return base.RUNNING

    def _timed_out(self, job) -> bool:
        """The job's Timeout (DistributedJob.timeout, seconds; 0: none) has passed since its processes started."""
        timeout = getattr(job, "timeout", 0) or 0
        return timeout > 0 and time.monotonic() - self.started > timeout

    # ------------------------------------------------------------ terminate

    def terminate(self, step: base.Step) -> None:
        """Stop torchrun here and ask the other nodes to stop theirs; wait until they have, or
        until their worker is known to be lost; free the reserved workers."""
        if self.gang is None:
            return
        nr = self.gang.nr
        NodeLaunch.objects.filter(noderun=nr, index__gt=0).exclude(status=st.EXITED).update(stop_requested=True)
        if self.local is not None:
            code = self.local.stop()
            NodeLaunch.objects.filter(noderun=nr, index=0).update(status=st.EXITED, exit_code=code, finished_at=timezone.now())
        self._wait_for_members()
        workers.release(nr)
        self._release_port()

    def _release_port(self) -> None:
        if self.port is not None:
            self.port.release()

    def _wait_for_members(self) -> None:
        deadline = time.monotonic() + settings.LOST_AFTER_SECONDS + launch.STOP_GRACE_SECONDS + 2 * settings.HEARTBEAT_SECONDS
        while time.monotonic() < deadline:
            members = self.gang.members(status__in=(st.RESERVED, st.RUNNING))
            lost = explain.lost_members(members)
            if all(m.status == st.RESERVED or m in lost for m in members):
                NodeLaunch.objects.filter(noderun=self.gang.nr, status=st.RESERVED).update(status=st.EXITED)
                return
            time.sleep(base.POLL_SECONDS)
