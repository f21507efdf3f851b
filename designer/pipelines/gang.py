"""Distributed nodes: Node count x Process count per node across the Celery workers.

One worker = one node. The worker that runs the node's task is node 0: it reserves Node count - 1
other live, idle workers (a conditional UPDATE of `Worker.reserved_by`, so two jobs never share
one), records one `NodeLaunch` per node, starts PyTorch's launcher (torchrun, c10d rendezvous
hosted at node 0) itself and sends each other worker a `launch_node` task on that worker's own
queue. From then on the database is the only channel: every node writes a heartbeat to its row,
node 0 watches the rows, and a node stops its torchrun when its row asks it to, when the run is
cancelled or when the node's task is no longer running.

Logs (all in the node's `logs/` folder of the artifact store): `70_mpi_log.txt` for the
launchers (what node 0 decided, and every torchrun's own output) and `70_driver_log_<rank>.txt`
per process (training.rank). A job that cannot start fails within seconds with the reason in its
error and in 70_mpi_log.txt.
"""
from __future__ import annotations

import json
import shutil
import socket
import time
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db.models import Case, Exists, OuterRef, Q, Value, When
from django.db.models.functions import Concat
from django.utils import timezone
from kombu.exceptions import OperationalError

from designer.celery import host_queue
from designer.engine import scheduler as s
from designer.engine.executor import DistributedJob, DistributedLaunchError, NodeContext
from designer.pipelines.catalogue import get_catalogue
from designer.pipelines.models import NodeLaunch, NodeRun, Run, Worker
from training import launch

POLL_SECONDS = 0.25


def launcher_for(noderun_id: int, worker: str):
    """The `launcher` the executor hands to a distributed module (NodeContext.launch_distributed)."""

    def launcher(ctx: NodeContext, job: DistributedJob) -> None:
        _Gang(NodeRun.objects.select_related("run").get(pk=noderun_id), worker, ctx, job).run()

    return launcher


@dataclass
class _Node:
    hostname: str
    address: str
    cpus: int
    gpus: int

    @property
    def units(self) -> int:
        return self.gpus or self.cpus

    @property
    def unit_name(self) -> str:
        return "GPU(s)" if self.gpus else "CPU core(s)"


class _Gang:
    """Node 0's side of one distributed job: reserve, start, watch, stop, explain."""

    def __init__(self, nr: NodeRun, worker: str, ctx: NodeContext, job: DistributedJob):
        self.nr, self.me, self.ctx, self.job = nr, worker, ctx, job
        self.n = ctx.run_settings["node_count"]
        self.p = ctx.run_settings["process_count_per_node"]
        self.label = ctx.module.label
        self.logs = ctx.logs_dir()
        self.mpi_log = self.logs / launch.MPI_LOG
        self.state_dir = ctx.node_dir / "work" / "ranks"
        self.local: launch.NodeProcess | None = None

    def say(self, text: str) -> None:
        launch.append_log(self.mpi_log, f"launcher: {text}")

    def run(self) -> None:
        shutil.rmtree(self.state_dir, ignore_errors=True)
        for old in self.logs.glob("70_driver_log_*.txt"):
            old.unlink()
        self.say(f"{self.label}: Node count {self.n} x Process count per node {self.p} = {self.n * self.p} processes")
        try:
            nodes = self._reserve()
            port = self._pick_port()
            self._start(nodes, port)
            self._watch()
        except DistributedLaunchError as e:
            self.say(str(e))
            raise
        finally:
            self._stop_everything()
            Worker.objects.filter(reserved_by=self.nr).update(reserved_by=None)

    # ------------------------------------------------------------ before any process starts

    def _reserve(self) -> list[_Node]:
        mine = Worker.objects.filter(hostname=self.me).first()
        me = _Node(self.me, mine.address if mine else settings.WORKER_ADDRESS, mine.cpus if mine else settings.WORKER_CPUS,
                   mine.gpus if mine else 0)
        if self.p > me.units:
            raise DistributedLaunchError(
                f"{self.label}: Process count per node is {self.p}, more than the {me.units} {me.unit_name} of worker "
                f"{self.me} (node 0); lower Process count per node to at most {me.units}")
        # reservations of nodes that no longer run (their worker died mid-job) are void
        Worker.objects.filter(reserved_by__isnull=False).exclude(reserved_by__status=s.RUNNING).update(reserved_by=None)
        if mine:
            Worker.objects.filter(pk=mine.pk, reserved_by__isnull=True).update(reserved_by=self.nr)
        nodes = [me]
        if self.n == 1:
            return nodes
        from designer.pipelines.runs import live_workers

        others = list(live_workers().exclude(hostname=self.me).order_by("hostname"))
        running = {w.split(":", 1)[-1] for w in NodeRun.objects.filter(status=s.RUNNING).exclude(pk=self.nr.pk)
                   .values_list("worker", flat=True)}
        busy, small = [], []
        for w in others:
            if len(nodes) == self.n:
                break
            node = _Node(w.hostname, w.address or w.hostname, w.cpus, w.gpus)
            if self.p > node.units:
                small.append(f"{w.hostname} ({node.units} {node.unit_name})")
            elif w.hostname in running or not Worker.objects.filter(pk=w.pk, reserved_by__isnull=True).update(reserved_by=self.nr):
                busy.append(w.hostname)
            else:
                nodes.append(node)
        if len(nodes) < self.n:
            alive = [self.me] + [w.hostname for w in others]
            why = f"{len(alive)} worker(s) alive ({', '.join(alive)})"
            if busy:
                why += f"; busy with other nodes: {', '.join(busy)}"
            if small:
                why += f"; fewer units than Process count per node {self.p}: {', '.join(small)}"
            raise DistributedLaunchError(
                f"{self.label}: Node count is {self.n}, but only {len(nodes)} worker(s) can take a node now: {why}. "
                f"One worker is one node: lower Node count to at most {len(nodes)}, or start more workers")
        self.say("nodes: " + ", ".join(f"{i}: {node.hostname} ({node.address})" for i, node in enumerate(nodes)))
        return nodes

    def _pick_port(self) -> int:
        """The rendezvous port at node 0: the first free one of DISTRIBUTED_PORTS (0: any free port)."""
        ports = settings.DISTRIBUTED_PORTS
        for port in ports:
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # TIME_WAIT is no obstacle; a listener is
                try:
                    probe.bind(("", port))
                except OSError as e:
                    self.say(f"port {port} is in use on {self.me}: {e.strerror}")
                    continue
                return probe.getsockname()[1]
        names = f"port {ports[0]} is" if len(ports) == 1 else f"ports {ports[0]}-{ports[-1]} are"
        raise DistributedLaunchError(
            f"{self.label}: the rendezvous {names} in use on worker {self.me} (node 0); free it, or set "
            "DISTRIBUTED_PORTS on the workers to other ports (0: any free port)")

    def _start(self, nodes: list[_Node], port: int) -> None:
        endpoint = f"{nodes[0].address}:{port}"
        gpu = self.job.gpu_argv is not None and all(node.gpus for node in nodes)
        self.say(f"rendezvous (c10d) at {endpoint}, id designer-{self.nr.pk}; {'NCCL on GPUs' if gpu else 'Gloo on CPUs'}")
        self.logs.mkdir(parents=True, exist_ok=True)
        launches = []
        for index, node in enumerate(nodes):
            command = launch.torchrun_command(
                self.job.module, [*self.job.argv, *(self.job.gpu_argv if gpu else [])], self.n, self.p, endpoint,
                f"designer-{self.nr.pk}", is_host=index == 0, local_addr=node.address,
                join_timeout=int(settings.DISTRIBUTED_START_SECONDS) + 30)
            env = launch.rank_environment(self.logs, self.state_dir, node.hostname, index, max(1, node.cpus // self.p))
            spec = {"command": command, "env": env, "mpi_log": str(self.mpi_log), "prefix": f"node {index} ({node.hostname})"}
            now = timezone.now() if index == 0 else None
            launches.append(NodeLaunch.objects.create(noderun=self.nr, index=index, worker=node.hostname, spec=spec,
                                                      status="running" if index == 0 else "reserved",
                                                      started_at=now, heartbeat_at=now))
        first = launches[0].spec
        self.local = launch.NodeProcess(first["command"], first["env"], self.mpi_log, first["prefix"])
        from designer.pipelines.tasks import launch_node

        for row in launches[1:]:
            launch_node.apply_async(args=[row.pk], queue=host_queue(row.worker))
            self.say(f"sent node {row.index} to worker {row.worker}")

    # ------------------------------------------------------------ while it runs

    def _watch(self) -> None:
        started = time.monotonic()
        relay = _Relay(self.ctx, self.job.metrics_file, self.logs / "70_driver_log_0.txt")
        while True:
            time.sleep(POLL_SECONDS)
            relay.pump()
            self.ctx.check_cancelled()
            code = self.local.poll()
            members = list(NodeLaunch.objects.filter(noderun=self.nr, index__gt=0))
            late = [m for m in members if m.status == "reserved" and time.monotonic() - started > settings.DISTRIBUTED_START_SECONDS]
            failed = [m for m in members if m.status == "exited" and m.exit_code != 0]
            if _lost(members) or late or failed or code not in (None, 0):
                break
            if code == 0 and all(m.status == "exited" for m in members):
                relay.pump()
                self.say("every node finished")
                return
        self._stop_everything()
        relay.pump()
        raise DistributedLaunchError(self._explain(late))

    def _stop_everything(self) -> None:
        """Stop torchrun here and ask the other nodes to stop theirs; wait until they have, or
        until their worker is known to be lost."""
        NodeLaunch.objects.filter(noderun=self.nr, index__gt=0).exclude(status="exited").update(stop_requested=True)
        if self.local is not None:
            code = self.local.stop()
            NodeLaunch.objects.filter(noderun=self.nr, index=0).update(status="exited", exit_code=code,
                                                                       finished_at=timezone.now())
        deadline = time.monotonic() + settings.LOST_AFTER_SECONDS + launch.STOP_GRACE_SECONDS + 2 * settings.HEARTBEAT_SECONDS
        while time.monotonic() < deadline:
            members = list(NodeLaunch.objects.filter(noderun=self.nr, index__gt=0).exclude(status="exited"))
            lost = _lost(members)
            if all(m.status == "reserved" or m in lost for m in members):
                NodeLaunch.objects.filter(noderun=self.nr, status="reserved").update(status="exited")
                return
            time.sleep(POLL_SECONDS)

    def _explain(self, late: list[NodeLaunch]) -> str:
        members = list(NodeLaunch.objects.filter(noderun=self.nr, index__gt=0))
        states = launch.rank_states(self.state_dir)
        lost = _lost([m for m in members if m.status == "running"])
        if lost:
            m = lost[0]
            ranks = sorted(r for r, st in states.items() if st["node_index"] == m.index)
            seconds = (timezone.now() - m.heartbeat_at).total_seconds()
            if not ranks:
                return (f"{self.label}: node {m.index} (worker {m.worker}) was lost before its processes started: "
                        f"no word from it for {seconds:.0f} s; the other nodes were stopped")
            names = f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {', '.join(map(str, ranks))}"
            return (f"{self.label}: {names} was lost with its worker {m.worker} (node {states[ranks[0]]['node_rank']}): "
                    f"no heartbeat for {seconds:.0f} s, the worker was killed or cut off; the other ranks were stopped")
        if late:
            m = late[0]
            return (f"{self.label}: worker {m.worker} did not start node {m.index} within {settings.DISTRIBUTED_START_SECONDS:g} s "
                    "(DISTRIBUTED_START_SECONDS); the other nodes were stopped")
        first = launch.first_failure(self.state_dir)
        if first:
            st, log = first.state, f"70_driver_log_{first.rank}.txt"
            return (f"{self.label}: rank {first.rank} (node {st['node_rank']}, local rank {st['local_rank']}, worker "
                    f"{st['worker']}) {first.how}; the other ranks were stopped. The last lines of {log}:\n"
                    f"{launch.tail(self.logs / log)}")
        codes = {0: self.local.poll()} | {m.index: m.exit_code for m in members}
        index = next((i for i, c in sorted(codes.items()) if c not in (None, 0)), 0)
        return (f"{self.label}: torchrun on node {index} exited with code {codes[index]} before any process failed; "
                f"the last lines of {launch.MPI_LOG}:\n{launch.tail(self.mpi_log)}")


# ---------------------------------------------------------------- routing: which worker is node 0


def run_settings_of(nr: NodeRun) -> tuple[int, int]:
    """(Node count, Process count per node) of a node; (1, 1) for a module that is not distributed."""
    if not get_catalogue().get(nr.kind).distributed:
        return 1, 1
    from designer.pipelines.runs import run_graph

    # the run's DAG is kept per process: the snapshot (megabytes for a big pipeline) is read once
    run = nr.run if NodeRun.run.is_cached(nr) else Run.objects.defer("snapshot").get(pk=nr.run_id)
    rs = run_graph(run).nodes.get(nr.node_id, {}).get("run_settings") or {}
    return int(rs.get("node_count", 1)), int(rs.get("process_count_per_node", 1))


def route_for(nr: NodeRun) -> dict:
    """The apply_async options of the `run_node` message of `nr`.

    The worker that takes a distributed node's task is its node 0, and node 0 must offer Process
    count per node units (GPUs, or else CPU cores): so a distributed node other than 1 x 1 goes
    to the own queue of a live worker that can be its node 0, preferring one that is idle (not
    reserved by a job and running no node), then the one with the fewest units that fit (the
    big ones stay free for the big jobs). `{}` (any worker) for any other node, and when no
    live worker can ever be node 0: the worker that takes it then explains why it cannot start.
    One query (two when `nr.run` is not loaded; a third, once per run and process, for the DAG)."""
    n, p = run_settings_of(nr)
    if n * p == 1:
        return {}
    from designer.pipelines.runs import live_workers

    running = NodeRun.objects.filter(status=s.RUNNING, worker__endswith=Concat(Value(":"), OuterRef("hostname")))
    fit = (live_workers().filter(Q(gpus__gte=p) | Q(gpus=0, cpus__gte=p))
           .annotate(busy=Q(reserved_by__isnull=False) | Exists(running),
                     units=Case(When(gpus__gt=0, then="gpus"), default="cpus"))
           .order_by("busy", "units", "hostname").values_list("hostname", flat=True))
    best = fit.first()
    return {"queue": host_queue(best)} if best else {}


def forward_if_unfit(nr: NodeRun, worker_name: str) -> bool:
    """Called by a worker that picked up `nr` before claiming it: if `nr` is distributed, this
    worker cannot be its node 0 (fewer units than Process count per node) and a live worker
    can, send the node's task on to that worker and return True (this worker must leave the
    node alone: it stays queued, and is claimed by the worker it was sent to). False otherwise:
    this worker goes on (and, if it cannot be node 0, fails the node saying why)."""
    n, p = run_settings_of(nr)
    if n * p == 1:
        return False
    me = Worker.objects.filter(hostname=worker_name).values_list("gpus", "cpus").first()
    if (me[0] or me[1] if me else settings.WORKER_CPUS) >= p:
        return False
    route = route_for(nr)
    if not route or route["queue"] == host_queue(worker_name):
        return False
    from designer.pipelines.tasks import run_node

    try:
        run_node.apply_async(args=[nr.pk], **route)
    except OperationalError:
        pass  # the broker is away: the node stays queued, and queued nodes are sent again (runs.py)
    return True


def lost_with_worker(nr: NodeRun) -> str:
    """For a distributed node whose own worker (node 0's) was lost: which ranks ran there, from
    the NodeLaunch rows (which node that worker ran) and the ranks' state files (which ranks that
    node ran), as a sentence for the node's error; '' for any other node."""
    worker = nr.worker.split(":", 1)[-1]
    indexes = set(NodeLaunch.objects.filter(noderun=nr, worker=worker).values_list("index", flat=True))
    if not indexes:
        return ""
    from designer.pipelines.runs import node_dir

    states = launch.rank_states(node_dir(nr.run_id, nr.node_id) / "work" / "ranks")
    ranks = sorted(r for r, st in states.items() if st.get("node_index") in indexes)
    nodes = ", ".join(str(i) for i in sorted(indexes))
    if not ranks:
        return f" It ran node {nodes} of the distributed job, before its processes started; the other nodes stop on their own."
    names = f"Rank {ranks[0]} was" if len(ranks) == 1 else f"Ranks {', '.join(map(str, ranks))} were"
    node_ranks = ", ".join(str(n) for n in sorted({states[r]["node_rank"] for r in ranks}))
    return f" {names} lost with it (node {node_ranks}); the other ranks of the distributed job stop on their own."


def _lost(members: list[NodeLaunch]) -> list[NodeLaunch]:
    limit = settings.LOST_AFTER_SECONDS
    now = timezone.now()
    return [m for m in members if m.status == "running" and m.heartbeat_at and (now - m.heartbeat_at).total_seconds() > limit]


class _Relay:
    """Rank 0's metrics file and driver log, as the node's metric and log events, while it runs."""

    def __init__(self, ctx: NodeContext, metrics_file: Path | None, rank0_log: Path):
        self.ctx = ctx
        self.files = {"metrics": metrics_file, "log": rank0_log}
        self.offsets = {"metrics": 0, "log": 0}

    def pump(self) -> None:
        for what, path in self.files.items():
            for line in self._new_lines(what, path):
                if what == "log":
                    self.ctx.log(f"rank 0: {line}")
                else:
                    m = json.loads(line)
                    self.ctx.metric(m["name"], m["value"], m.get("step"))

    def _new_lines(self, what: str, path: Path | None) -> list[str]:
        if path is None or not Path(path).exists():
            return []
        with Path(path).open("rb") as f:
            f.seek(self.offsets[what])
            data = f.read()
        complete = data[: data.rfind(b"\n") + 1]
        self.offsets[what] += len(complete)
        return complete.decode(errors="replace").splitlines()


# ---------------------------------------------------------------- the other nodes


def run_member(launch_id: int) -> None:
    """A node other than 0 (the `launch_node` task on the worker chosen for it): run its torchrun
    until it ends, or until node 0, a cancel or the end of the node's task says stop."""
    now = timezone.now()
    if not NodeLaunch.objects.filter(pk=launch_id, status="reserved", stop_requested=False,
                                     noderun__status=s.RUNNING).update(status="running", started_at=now, heartbeat_at=now):
        return  # stopped or abandoned before this task got its turn
    spec = NodeLaunch.objects.get(pk=launch_id).spec
    proc = launch.NodeProcess(spec["command"], spec["env"], Path(spec["mpi_log"]), spec["prefix"])
    try:
        beat = time.monotonic()
        while proc.poll() is None:
            time.sleep(min(POLL_SECONDS, settings.HEARTBEAT_SECONDS))
            if time.monotonic() - beat < settings.HEARTBEAT_SECONDS:
                continue
            beat = time.monotonic()
            NodeLaunch.objects.filter(pk=launch_id).update(heartbeat_at=timezone.now())
            if _told_to_stop(launch_id):
                proc.log("stopping: node 0 asked to, or the run was cancelled, or the node's task ended")
                break
    finally:
        code = proc.stop()
        NodeLaunch.objects.filter(pk=launch_id).update(status="exited", exit_code=code, finished_at=timezone.now(),
                                                       heartbeat_at=timezone.now())


def _told_to_stop(launch_id: int) -> bool:
    return NodeLaunch.objects.filter(pk=launch_id).filter(
        Q(stop_requested=True) | Q(noderun__run__cancel_requested=True) | ~Q(noderun__status=s.RUNNING)).exists()
