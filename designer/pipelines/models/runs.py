"""A run of a pipeline: its nodes, their events and the launches of a distributed node's processes."""
from __future__ import annotations

from django.conf import settings
from django.db import models

from designer.engine import statuses


class VisibleRuns(models.Manager):
    """Runs not deleted: what every page, API answer and reuse sees (`Run.objects`)."""

    def get_queryset(self):
        return super().get_queryset().filter(deleted_at__isnull=True)


class Source(models.TextChoices):
    """Where a run or a sweep was submitted from: recorded by the product (the view, the command or
    the sweep that submits it), never claimed by the client."""

    PAGE = "page", "Page"  # the designer page (a signed-in browser's session)
    API = "api", "API"  # a script, signed in by a personal API token
    HEADLESS = "headless", "Headless"  # manage.py run_pipeline
    SWEEP = "sweep", "Sweep trial"  # a trial of a sweep
    UNKNOWN = "unknown", "Unknown"  # submitted before sources were recorded


class Run(models.Model):
    STATUSES = statuses.choices(statuses.RUN_STATUSES)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="runs")
    pipeline = models.ForeignKey("pipelines.Pipeline", null=True, blank=True, on_delete=models.SET_NULL, related_name="runs")
    name = models.CharField(max_length=200)
    snapshot = models.JSONField(help_text="The pipeline as submitted: never changes afterwards")
    status = models.CharField(max_length=16, choices=STATUSES, default=statuses.QUEUED)
    submitted_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    cancel_requested = models.BooleanField(default=False)
    parameter_values = models.JSONField(default=dict, blank=True,
                                        help_text="the pipeline parameters' values it ran with (also in the snapshot)")
    # what the Jobs page shows, filters and sorts by (designer/pipelines/jobs/)
    experiment = models.CharField(max_length=200, blank=True, help_text="a group of runs; the pipeline's name unless given")
    tags = models.JSONField(default=dict, blank=True, help_text="{key: value}, both strings (runs/labels.py)")
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.UNKNOWN)
    metrics = models.JSONField(default=dict, blank=True,
                               help_text="its final metrics, stored as it ends: {name: {last, best, node, steps}} (runs/final_metrics.py)")
    # deleted by its owner: hidden at once; its row and folders go when no other run reuses its
    # outputs any more (retention.py)
    deleted_at = models.DateTimeField(null=True, blank=True, db_index=True)

    objects = VisibleRuns()
    everything = models.Manager()  # deleted ones too: retention.py, and related lookups (nr.run)

    class Meta:
        ordering = ["-submitted_at"]
        base_manager_name = "everything"
        # the Jobs page: a user's runs newest first, or those of one experiment, status or source,
        # a page at a time (bench/jobs.py)
        indexes = [models.Index(fields=["owner", "-submitted_at"], name="run_owner_submitted"),
                   models.Index(fields=["owner", "experiment", "-submitted_at"], name="run_owner_experiment"),
                   models.Index(fields=["owner", "status", "-submitted_at"], name="run_owner_status"),
                   models.Index(fields=["owner", "source", "-submitted_at"], name="run_owner_source")]

    def __str__(self):
        return f"run {self.pk} of {self.name}"

    @property
    def finished(self) -> bool:
        return self.status in statuses.RUN_FINISHED

    @property
    def duration(self) -> float | None:
        """Seconds from its start to its end; None while it has not both."""
        return (self.finished_at - self.started_at).total_seconds() if self.started_at and self.finished_at else None


class NodeRun(models.Model):
    STATUSES = statuses.choices(statuses.NODE_STATUSES)
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="nodes")
    node_id = models.CharField(max_length=64)
    kind = models.CharField(max_length=100)
    status = models.CharField(max_length=16, choices=STATUSES, default=statuses.PENDING, db_index=True)
    queued_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    cache_key = models.CharField(max_length=64, blank=True)
    reused_from = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL)
    outputs = models.JSONField(default=dict, blank=True, help_text="{output port: directory}")
    output_ids = models.JSONField(default=dict, blank=True, help_text="{output port: identity used in cache keys}")
    error = models.TextField(blank=True)
    # the worker that claimed it (NULL: run inline, outside any worker); a worker's row outlives
    # it (marked stopped), so that "worker X stopped responding" can still name it
    worker = models.ForeignKey("Worker", null=True, blank=True, on_delete=models.SET_NULL, related_name="noderuns")
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    # a node whose worker was lost goes back to the queue, up to its Max retries (run setting
    # max_retries): this is its attempt number, and `attempts` says what became of the earlier ones
    attempt = models.PositiveSmallIntegerField(default=1)
    attempts = models.JSONField(default=list, blank=True,
                                help_text="the earlier attempts: [{attempt, worker, started_at, lost_at, reason, retried_at}]")
    # a pending node whose identical twin (same cache key, same owner) is queued or running in
    # another run: it waits for that one and reuses its output (advance.py)
    waits_for = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="waiters")
    # The outbox (designer/pipelines/runs/outbox.py): a queued node's `run_node` message is due at
    # `send_due_at` (set in the same transaction as the move to queued; NULL once picked up).
    send_due_at = models.DateTimeField(null=True, blank=True, db_index=True,
                                       help_text="when this queued node's message is (re)sent to the broker")
    sent_at = models.DateTimeField(null=True, blank=True, help_text="when the broker last took its message")
    send_attempts = models.PositiveIntegerField(default=0)
    send_error = models.TextField(blank=True, help_text="why the broker refused its message, until it takes one")

    class Meta:
        ordering = ["run", "id"]
        constraints = [models.UniqueConstraint(fields=["run", "node_id"], name="one_noderun_per_node")]
        # "is any node of this run still to finish?" after every node, without scanning the run
        indexes = [models.Index(fields=["run", "status"], name="noderun_run_status"),
                   # reuse: an earlier completed node of this key (not a walk through every completed node)
                   models.Index(fields=["cache_key", "status"], name="noderun_cache_key_status")]

    def __str__(self):
        return f"{self.node_id} ({self.kind}) in run {self.run_id}"

    @property
    def worker_label(self) -> str:
        """`<machine>:<worker name>` of the worker that ran it, or ''."""
        return self.worker.label if self.worker_id else ""

    @property
    def duration(self) -> float | None:
        if self.started_at and self.finished_at:
            return (self.finished_at - self.started_at).total_seconds()
        return None


class Event(models.Model):
    """What the engine reported: stored here, broadcast to open pages."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="events")
    node_id = models.CharField(max_length=64, blank=True)
    type = models.CharField(max_length=32)
    data = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]


class NodeLaunch(models.Model):
    """One machine of a distributed node's job: the worker that runs torchrun for node `index`
    (0: the worker that runs the node's task and hosts the rendezvous), and how that went."""

    STATUSES = statuses.choices(statuses.LAUNCH_STATUSES)
    noderun = models.ForeignKey(NodeRun, on_delete=models.CASCADE, related_name="launches")
    index = models.PositiveIntegerField(help_text="0 hosts the rendezvous; torchrun numbers the nodes itself")
    # NULL: node 0 of a job run inline (outside any worker)
    worker = models.ForeignKey("pipelines.Worker", null=True, blank=True, on_delete=models.SET_NULL, related_name="launches")
    spec = models.JSONField(default=dict, help_text="command, environment and launcher log of this node's torchrun")
    status = models.CharField(max_length=16, choices=STATUSES, default=statuses.RESERVED)
    stop_requested = models.BooleanField(default=False)
    exit_code = models.IntegerField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["noderun", "index"]
        constraints = [models.UniqueConstraint(fields=["noderun", "index"], name="one_launch_per_node_index")]

    def __str__(self):
        return f"node {self.index} of {self.noderun} on {self.worker_name}"

    @property
    def worker_name(self) -> str:
        return self.worker.hostname if self.worker_id else "this process"
