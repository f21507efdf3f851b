"""What stays on disk: deleting runs, and collecting what deleted runs leave behind.

A run's outputs may be another run's too: a later run that reused a node points at the folder the
first one wrote (NodeRun.reused_from), and shows that node's log from there. So deleting a run
hides it at once (`Run.objects` no longer sees it: pages, API, comparison, reuse) and leaves its
files to `collect`, which removes a node's folder once no run that is not deleted reuses it, and
the run's row (its nodes, events and launches with it) and folder once none of its nodes is reused.
A registered model is a copy of its own (models/...): deleting the run that trained it keeps it.

`collect` runs on the maintenance loop (maintenance.py), every RETENTION_SECONDS (30 s). It leaves
runs deleted less than GRACE ago alone: a run that chose to reuse one of their nodes just before the
deletion has committed that choice by then, so a folder still in use is never removed under it.
"""
from __future__ import annotations

import logging
import shutil
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from designer.engine import paths
from designer.engine import statuses as st
from designer.engine.store import StoreError
from designer.pipelines import artifact_store
from designer.pipelines.models import ModelVersion, NodeRun, Run, Trial

log = logging.getLogger(__name__)
GRACE = timedelta(seconds=10)
BATCH = 50  # runs collected per call: a maintenance tick stays short after a large clean-up


class CannotDelete(ValueError):
    """The run is not over (or its sweep is not): it must be cancelled first."""


def delete(run: Run) -> None:
    """Hide a finished run now; its files go with `collect`. CannotDelete while it, or the sweep
    it is a trial of, still runs."""
    trial = Trial.objects.filter(run_id=run.pk).select_related("sweep").first()
    if trial is not None and not trial.sweep.finished:
        raise CannotDelete(f"run #{run.pk} is trial {trial.number} of the sweep '{trial.sweep.name}', which is "
                           f"{trial.sweep.status}: cancel the sweep (or wait for it to end), then delete the run")
    with transaction.atomic():
        hidden = Run.objects.filter(pk=run.pk, status__in=st.RUN_FINISHED).update(deleted_at=timezone.now())
        current = Run.everything.get(pk=run.pk)
        if not hidden and current.deleted_at is None:  # (deleted meanwhile by another request: done)
            raise CannotDelete(f"run #{run.pk} '{run.name}' is {current.status}: cancel it first, then delete it")
        # what names it keeps its own record: the sweep its trial's values and metric, a
        # registered version its lineage (run id, name, pipeline, datasets...)
        Trial.objects.filter(run_id=run.pk).update(run=None)
        ModelVersion.objects.filter(run_id=run.pk).update(run=None)


def collect(grace: timedelta = GRACE) -> int:
    """Remove the folders of deleted runs that no run reuses any more, and the runs left with
    none; returns how many runs went for good."""
    gone = 0
    due = Run.everything.filter(deleted_at__lte=timezone.now() - grace).order_by("deleted_at")
    for run_id in due.values_list("id", flat=True)[:BATCH]:
        gone += _collect_run(run_id)
    return gone


def _collect_run(run_id: int) -> int:
    # nodes of this run whose outputs a run that is not deleted still reads
    reused = set(NodeRun.objects.filter(reused_from__run_id=run_id, run__deleted_at__isnull=True)
                 .values_list("reused_from__node_id", flat=True))
    store = artifact_store.get()
    if store.local_root() is None:  # a bucket: each node's objects (outputs, logs), manifests first
        for node_id in NodeRun.objects.filter(run_id=run_id).values_list("node_id", flat=True):
            if node_id not in reused and paths.is_safe_id(node_id):
                try:
                    store.delete_prefix(f"{run_id}/{node_id}")
                except StoreError as e:  # the store is away: the next collection tries again
                    log.warning("could not remove run %s's node %s from the store: %s", run_id, node_id, e)
                    return 0
        if reused:
            return 0
        Run.everything.filter(pk=run_id, deleted_at__isnull=False).delete()
        return 1
    folder = paths.run_dir(store.local_root(), run_id)
    if folder.is_dir():
        for child in folder.iterdir():
            if child.name not in reused:
                _remove(child)
    if reused:
        return 0
    Run.everything.filter(pk=run_id, deleted_at__isnull=False).delete()
    _remove(folder)
    return 1


def _remove(path) -> None:
    try:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()
    except OSError as e:  # another collector got there first, or a file is busy: the next call tries again
        log.warning("could not remove %s: %s", path, e)
