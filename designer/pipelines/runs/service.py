"""Runs: submit, cancel, watch for nodes whose worker was lost, and say why a run waits.

The run logic calls the launchers' verbs (launchers/base.py) and never knows which one it has:
a node goes to the Celery workers, or is run in this process (`inline`); a cancel terminates
every running node, a look at the nodes' health fails those whose worker was lost. Moving a run
forward is advance.py; running one node, execute.py.
"""
from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from designer.engine import graph, parameters
from designer.engine import statuses as st
from designer.engine.executor import Event
from designer.engine.problems import labelled, node_names
from designer.pipelines.catalogue.service import get_catalogue
from designer.pipelines.compute import workers
from designer.pipelines.datasets import service as datasets
from designer.pipelines.models import NodeRun, Run, Source, Trial
from designer.pipelines.registry import service as registry
from designer.pipelines.runs import events, outbox, retries, routing
from designer.pipelines.runs.advance import advance, transition, wake_stranded, wake_waiters
from designer.pipelines.runs.artifacts import node_dir
from designer.pipelines.runs.execute import execute_noderun
from designer.pipelines.runs.labels import MAX_EXPERIMENT, MAX_NAME, Labels
from designer.pipelines.runs.launchers.base import Launcher, Step
from designer.pipelines.runs.launchers.celery import CeleryLauncher
from designer.pipelines.runs.launchers.inline import InlineLauncher
from designer.pipelines.runs.launchers.liveness import lost_limit
from designer.pipelines.runs.rungraph import run_graph

__all__ = ["submit", "dispatch", "run_inline", "advance", "execute_noderun", "cancel", "reap_lost_nodes",
           "live_workers", "waiting_message", "node_dir", "run_graph"]

CANCELLED_BEFORE_START = "Cancelled by the user before it started."
NO_WORKER = ("No worker is running: the run is queued and kept, and starts as soon as a worker connects "
             "(`make run` starts one; `make worker` starts one alone).")

celery_launcher = CeleryLauncher()
inline_launcher = InlineLauncher(execute_noderun)


def launcher_of(nr: NodeRun) -> Launcher:
    """The launcher that runs `nr`: the worker's, or this process's for a node run inline."""
    return inline_launcher if nr.status == st.RUNNING and nr.worker_id is None else celery_launcher


def submit(owner, doc: dict, pipeline=None, name: str | None = None, regenerate: set[str] | bool = False,
           inline: bool = False, values: dict | None = None, trial: Trial | None = None,
           labels: Labels | None = None, source: str = Source.UNKNOWN) -> Run:
    """Freeze the document, with these values of its pipeline parameters (missing: defaults), into
    a Run and hand its first nodes to the workers (or, with `inline`, run every node in this
    process through the same engine). `trial`: the sweep's trial that this run is. `labels`: the
    name, experiment and tags its submitter gave (labels.py; the pipeline's name by default);
    `source`: where it was submitted from, as the caller (a view, a command, a sweep) knows it.

    Raises graph.PipelineInvalid (every problem) when the document cannot run.
    """
    catalogue = get_catalogue(owner)
    doc, named = datasets.with_names_resolved(owner, doc)  # a dataset given by name: its latest version now
    if named:
        raise graph.PipelineInvalid(labelled(named, doc, catalogue))
    doc = graph.pin_versions(graph.upgrade(doc), catalogue)  # the snapshot names the version that runs
    # inline, the nodes run in this process, whatever target they name
    compute = None if inline else workers.targets()
    doc = parameters.resolve(graph.check(doc, catalogue, workers.machines(), compute), values, catalogue)
    if not doc["nodes"]:  # (a draft may be empty; a run of nothing would "complete" at once)
        raise graph.PipelineInvalid([graph.Problem("the pipeline has no module to run: drag one from the palette (or "
                                                   "double-click the canvas), then submit", "empty_pipeline")])
    doc = _bound(owner, doc, catalogue)
    if regenerate:
        for node in doc["nodes"]:
            if regenerate is True or node["id"] in regenerate:
                node["regenerate_output"] = True
    with transaction.atomic():
        run = Run.objects.create(owner=owner, pipeline=pipeline, snapshot=doc, parameter_values=doc.get("parameter_values", {}),
                                 source=source, **_named(labels or Labels(), name, pipeline, doc))
        NodeRun.objects.bulk_create(NodeRun(run=run, node_id=n["id"], kind=n["kind"]) for n in doc["nodes"])
        datasets.record_uses(run, doc)  # which version each Dataset node reads: the Data page's lineage
        if trial is not None:
            Trial.objects.filter(pk=trial.pk).update(run=run)
            trial.run = run
        # its first nodes queued (their messages owed: outbox.py) in the same transaction, so that
        # a web process that dies here leaves either no run or one the workers carry on
        queued = [] if inline else advance(run.id)
    if inline:
        run_inline(run.id)
    elif trial is not None:  # a sweep submits inside its own transaction: a worker must find the node
        transaction.on_commit(lambda: dispatch(queued))
    else:
        dispatch(queued)
    return run


def _named(labels: Labels, name: str | None, pipeline, doc: dict) -> dict:
    """The run's name (given, else the caller's, else the pipeline's), experiment (given, else the
    pipeline's name) and tags."""
    default = (pipeline.name if pipeline is not None else None) or doc.get("name") or "pipeline"
    return {"name": (labels.name or name or default)[:MAX_NAME], "experiment": (labels.experiment or default)[:MAX_EXPERIMENT],
            "tags": labels.tags}


def _bound(owner, doc: dict, catalogue) -> dict:
    """Dataset nodes pointed at their owner's files, Registered model nodes at their owner's
    versions; any other id is a problem naming the node by its label."""
    try:
        return registry.bind(owner, datasets.bind(owner, doc))
    except graph.PipelineInvalid as e:
        raise graph.PipelineInvalid(labelled(e.problems, doc, catalogue)) from None


def dispatch(noderun_ids: list[int]) -> None:
    """Launch these newly queued nodes on the workers now. The outbox owes their messages already
    (advance() stored that with the move to queued): when the broker is down, nothing is lost
    and the run starts when it is back (outbox.py)."""
    celery_launcher.launch_many(noderun_ids)


def run_inline(run_id: int) -> None:
    """Run the run's nodes in this process, through the same engine (headless `--inline`)."""
    queued = list(NodeRun.objects.filter(run_id=run_id, status=st.QUEUED).values_list("id", flat=True))
    for noderun_id in queued + advance(run_id):
        inline_launcher.launch(Step(noderun_id))


def cancel(run: Run) -> None:
    """Cancel what has not started; terminate what runs (it stops at a safe point, or its
    processes are ended: execute.py records it as cancelled)."""
    woken = []
    with transaction.atomic():
        Run.objects.filter(pk=run.pk).update(cancel_requested=True)
        now = timezone.now()
        for nr in run.nodes.filter(status__in=[st.PENDING, st.QUEUED]):
            was_queued = nr.status == st.QUEUED
            if transition(nr, nr.status, st.CANCELLED, finished_at=now, error=CANCELLED_BEFORE_START) and was_queued:
                woken.append(nr)  # other runs may wait for it: they run it themselves now
    for nr in run.nodes.filter(status=st.RUNNING):
        launcher_of(nr).terminate(Step(nr.pk))
    events.record(run.id, Event("run_cancel_requested", "", {}))
    advance(run.id)
    for nr in woken:
        dispatch(wake_waiters(nr))


def reap_lost_nodes() -> int:
    """Running nodes whose worker stopped sending heartbeats (killed, crashed, unplugged): back to
    the queue for their next attempt while they have retries left (retries.py), else failed."""
    lost = 0
    for nr in NodeRun.objects.select_related("worker").filter(status=st.RUNNING, heartbeat_at__lt=lost_limit()):
        health = launcher_of(nr).check_health(Step(nr.pk))
        if health.failure and retries.retry_lost(nr, health.failure):
            dispatch([nr.pk])
            lost += 1
        elif health.failure and transition(nr, st.RUNNING, st.FAILED, error=health.failure, finished_at=timezone.now()):
            events.record(nr.run_id, Event("node_failed", nr.node_id, {"error": health.failure}))
            dispatch(advance(nr.run_id, [nr.node_id]) + wake_waiters(nr))
            lost += 1
    dispatch(wake_stranded())
    return lost


def live_workers():
    """The live workers (workers.live_workers; kept here for the API and pages)."""
    return workers.live_workers()


def waiting_message(run: Run) -> str:
    """Why a queued run is not moving, in words, or ''."""
    if run.finished or run.nodes.filter(status=st.RUNNING).exists():
        return ""
    broker = outbox.waiting_for_broker(run.id)
    if broker:
        return broker
    if run.nodes.filter(status=st.QUEUED).exists() and not workers.live_workers().exists():
        return NO_WORKER
    for nr in run.nodes.filter(status=st.QUEUED).order_by("node_id")[:20]:
        nr.run = run
        why = routing.only_on(nr)  # only some workers can run it (the weights it loads)
        if why:
            return f"{_name(run, nr.node_id)} {why}"
    waiting = run.nodes.filter(status=st.PENDING, waits_for__isnull=False).select_related("waits_for").first()
    if waiting is not None:
        twin = waiting.waits_for
        return (f"{_name(run, waiting.node_id)} waits for the identical module of run {twin.run_id} ({twin.node_id}), "
                f"which is {twin.status}: it is computed once and its output reused here")
    return ""


def _name(run: Run, node_id: str) -> str:
    return node_names(run.snapshot, get_catalogue(run.owner_id)).get(node_id, node_id)
