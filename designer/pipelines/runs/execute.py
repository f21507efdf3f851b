"""Running one queued node, in a worker (the `run_node` task) or inline: claim it, hand its
inputs to the engine's executor, store the outcome and move the run forward.

Two commits per node: claiming it, then its outcome, its events and what becomes ready. While it
runs, its heartbeat (node_heartbeat.py) proves the worker alive and notices a cancel request,
which the module reads at its safe points; a distributed module's processes are started and
ended by launchers/distributed.py.
"""
from __future__ import annotations

import contextlib
import logging
import os
import time
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from designer.engine import cache, executor
from designer.engine import statuses as st
from designer.engine.artifact_cache import CacheFull
from designer.engine.store import NotInStore, StoreError
from designer.pipelines.catalogue.service import get_catalogue
from designer.pipelines.compute import workers
from designer.pipelines.models import NodeRun
from designer.pipelines.runs import artifacts, events, routing
from designer.pipelines.runs.advance import advance, transition, wake_waiters
from designer.pipelines.runs.launchers.distributed import launcher_for
from designer.pipelines.runs.node_heartbeat import NodeHeartbeat
from designer.pipelines.runs.rungraph import run_graph
from sdk import layout
from sdk.context import STOP_GRACE_SECONDS
from sdk.errors import ModuleError


class Unwatched:
    """What watches a node no sweep runs: its events go on as they are, nothing asks it to stop."""

    grace, ended = STOP_GRACE_SECONDS, False

    def __init__(self, nr: NodeRun, emit, log):
        self.emit = emit

    def stop(self) -> bool:
        return False


_watch = Unwatched


def watch_nodes_with(factory) -> None:
    """What watches each node while it runs, called (node run, emit, log): a sweep's policy for
    its trials (the sweeps concern registers policy.Watch when the app is ready, apps.py). Runs
    know nothing of sweeps: sweeps stand above runs and hook in here."""
    global _watch
    _watch = factory


CANCELLED_TEXT = "Cancelled by the user."
CANCELLED_EXIT = 75  # a pool process ended for a module deaf to a cancel (EX_TEMPFAIL)
log = logging.getLogger(__name__)


def execute_noderun(noderun_id: int) -> list[int]:
    """Run one queued node; return the NodeRun ids that can start next."""
    nr = NodeRun.objects.select_related("run").defer("run__snapshot").filter(pk=noderun_id).first()
    if nr is None:
        return []  # its run was deleted while the task waited in the queue
    node = run_graph(nr.run).nodes[nr.node_id]
    module = get_catalogue(nr.run.owner_id).for_node(node)
    if nr.status == st.QUEUED and routing.forward_if_unfit(nr, workers.current_name()):
        return []  # this worker cannot run it (node 0 of a distributed node, weights): handed on to one that can
    now = timezone.now()
    if not transition(nr, st.QUEUED, st.RUNNING, of_attempt=nr.attempt, started_at=now, heartbeat_at=now,
                      worker=workers.current(), send_due_at=None):
        return []  # cancelled or taken meanwhile (a duplicate message of the outbox ends here)
    buffer = events.Buffer(nr.run_id)
    # a sweep's trial: its policy may end the training early, saying why in the node's log
    watch = _watch(nr, buffer.add, lambda text: executor.append_log(artifacts.node_dir(nr.run_id, nr.node_id), text))
    launcher = launcher_for(nr.pk) if module.distributed else None
    outputs, error = None, None
    # in a worker's pool process, a module deaf to a cancel has its process ended; inline (a
    # command's own process) and distributed (its launcher ends its processes) it is waited for
    overdue = None if module.distributed or workers.current_name() == workers.INLINE else lambda: _end_overdue(nr, buffer)
    with NodeHeartbeat(nr.pk, nr.run_id, buffer, overdue, attempt=nr.attempt) as beat:
        try:
            # (an id no folder may have, of an old stored run, fails the node here: paths.OutsideFolder)
            folder = artifacts.node_dir(nr.run_id, nr.node_id)
            # its inputs here (with a bucket: fetched into this worker's cache, held while it runs)
            with artifacts.LogSync(nr.run_id, nr.node_id) as sync, contextlib.ExitStack() as inputs:
                if nr.attempt > 1:  # its worker was lost: this is a retry (retries.py)
                    _again(nr, folder, sync)
                keys = artifacts.input_keys(nr, module)
                held = _waiting_for_store(nr, folder, ("its inputs", "fetched from"), beat.cancelled,
                                          lambda: inputs.enter_context(artifacts.fetched(keys)))
                written = executor.execute(module, node, _inputs(nr, held), folder,
                                           watch.emit, beat.cancelled, launcher, watch.stop, watch.grace, nr.attempt)
                # kept in the store before it counts as completed: a worker lost during the upload
                # leaves nothing that any reader sees, and the node is reaped as lost
                outputs = _waiting_for_store(nr, folder, ("its outputs", "kept in"), beat.cancelled,
                                             lambda: artifacts.keep_outputs(nr.run_id, nr.node_id, written, held))
        except BaseException as e:  # the module's own error, a Cancelled, the store's refusal, or the worker's shutdown
            error = e
        artifacts.tidy(nr.run_id, nr.node_id, outputs)
    if error is not None:
        return _failed(nr, buffer, error, isinstance(error, executor.Cancelled) or beat.cancel_requested())
    return _completed(nr, buffer, outputs, reusable=not watch.ended)


def _again(nr: NodeRun, folder: Path, sync: artifacts.LogSync) -> None:
    """The next attempt of a node whose worker was lost: what the lost one left (its log, a
    training's checkpoint) comes back from the store, and the log says which attempt this is."""
    restored = _waiting_for_store(nr, folder, ("its earlier attempt's logs and checkpoint", "fetched from"),
                                  lambda: False, sync.restore)
    last = nr.attempts[-1] if nr.attempts else {}
    checkpoint = (folder / layout.WORK_DIR / layout.CHECKPOINT_FILE).is_file()
    executor.append_log(folder, f"attempt {nr.attempt}: attempt {last.get('attempt', nr.attempt - 1)} ran on "
                                f"{last.get('worker') or 'a worker'} and was lost (last heard of {last.get('lost_at', '?')}); "
                                + ("it goes on from the last checkpoint" if checkpoint else "it starts again")
                                + (f" ({', '.join(restored)} brought back from the artifact store)" if restored else ""))


def _inputs(nr: NodeRun, held: dict[str, Path]) -> dict[str, executor.InputArtifact]:
    """What the node's input ports receive: the folders its parents wrote, here, with their meta."""
    g = run_graph(nr.run)
    upstream = {x.node_id: x for x in NodeRun.objects.filter(run_id=nr.run_id, node_id__in=g.parents[nr.node_id]).order_by()}
    inputs = {}
    for port, (up, out) in g.inputs[nr.node_id].items():
        path = Path(held[artifacts.output_key(upstream[up].outputs[out])])
        meta = executor.read_meta(path)
        inputs[port] = executor.InputArtifact(path, meta.get("type", ""), meta)
    return inputs


def _waiting_for_store(nr: NodeRun, folder: Path, what: tuple[str, str], cancelled, attempt):
    """attempt(): fetching its inputs or keeping its outputs. A store that is away (a restart, the
    network) is tried again for STORE_RETRY_SECONDS, the node running on and saying so in its log;
    then (or when the cache cannot hold them, or a tree is not in the store, or on a cancel) the
    node fails, saying why."""
    things, verb = what
    began, pause = time.monotonic(), 1.0
    while True:
        try:
            done = attempt()
        except StoreError as e:
            waited = time.monotonic() - began
            if isinstance(e, (CacheFull, NotInStore)) or waited >= settings.STORE_RETRY_SECONDS or cancelled():
                tried = f" (tried again for {waited:.0f} s: STORE_RETRY_SECONDS)" if waited >= 1 else ""
                executor.append_log(folder, f"{things} could not be {verb} the artifact store{tried}: {e}")
                raise StoreFailed(f"{things} could not be {verb} the artifact store{tried}: {e}") from None
            if pause == 1.0:
                text = (f"{things} cannot be {verb} the artifact store yet: {e}; "
                        f"trying again for up to {settings.STORE_RETRY_SECONDS:.0f} s (STORE_RETRY_SECONDS)")
                executor.append_log(folder, text)
                log.warning("node run %s: %s", nr.pk, text)
            time.sleep(min(pause, settings.STORE_RETRY_SECONDS - waited))
            pause = min(pause * 2, 10.0)
            continue
        if pause > 1.0:
            executor.append_log(folder, f"{things} were {verb} the artifact store after {time.monotonic() - began:.0f} s")
        return done


class StoreFailed(ModuleError):
    """The artifact store refused a node's outputs or inputs (it is away, full, or refuses the credentials)."""


def _failed(nr: NodeRun, buffer: events.Buffer, error: BaseException, cancelled: bool) -> list[int]:
    text = CANCELLED_TEXT if cancelled else executor.error_text(error)
    _, ready = _ended(nr, buffer, st.CANCELLED if cancelled else st.FAILED, text)
    if isinstance(error, (KeyboardInterrupt, SystemExit)) and not cancelled:
        raise error
    return ready


def _ended(nr: NodeRun, buffer: events.Buffer, status: str, text: str, only_if_running=False) -> tuple[bool, list[int]]:
    """Record the node as failed or cancelled (if it still runs; its event also when it no longer
    does, unless `only_if_running`): (whether this call moved it, what is ready)."""
    with transaction.atomic():
        won = transition(nr, st.RUNNING, status, of_attempt=nr.attempt, error=text, finished_at=timezone.now())
        if not won and (only_if_running or not NodeRun.objects.filter(pk=nr.pk, attempt=nr.attempt).exists()):
            return False, []  # (its next attempt runs elsewhere: this worker was thought lost)
        buffer.add(executor.Event("node_cancelled" if status == st.CANCELLED else "node_failed", nr.node_id, {"error": text}))
        buffer.flush()
        ready = advance(nr.run_id, [nr.node_id])
    return won, ready + wake_waiters(nr)


def _end_overdue(nr: NodeRun, buffer: events.Buffer) -> None:
    """The heartbeat's call for a cancelled module that reached no safe point in time: the node is
    recorded as cancelled, then this pool process is ended (Celery starts another); nothing it
    was writing is reused, since a cancelled node's outputs never are."""
    text = (f"{CANCELLED_TEXT} The module reached no safe point within {settings.CANCEL_GRACE_SECONDS:g} s "
            "(setting CANCEL_GRACE_SECONDS): its worker process was ended.")
    won, _ = _ended(nr, buffer, st.CANCELLED, text, only_if_running=True)
    if won:  # (the module may have ended by itself meanwhile: then it is left alone)
        log.warning("node run %s: cancelled, no safe point within %s s: ending pool process %s",
                    nr.pk, settings.CANCEL_GRACE_SECONDS, os.getpid())
        os._exit(CANCELLED_EXIT)


def _completed(nr: NodeRun, buffer: events.Buffer, outputs: dict[str, str], reusable: bool = True) -> list[int]:
    """Record the node's outputs. Not `reusable` (a command a sweep's policy had to end: its outputs
    may be partial): no later run finds it by its cache key."""
    ids = {port: cache.output_identity(nr.cache_key, nr.pk, port) for port in outputs}
    key = {} if reusable else {"cache_key": ""}
    with transaction.atomic():
        if transition(nr, st.RUNNING, st.COMPLETED, of_attempt=nr.attempt, outputs=outputs, output_ids=ids,
                      finished_at=timezone.now(), **key):
            buffer.add(executor.Event("node_finished", nr.node_id, {"duration": nr.duration}))
        buffer.flush()
        ready = advance(nr.run_id, [nr.node_id])
    return ready + wake_waiters(nr)
