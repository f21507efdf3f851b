from __future__ import annotations

import uuid

from django.conf import settings
from django.core.files.storage import FileSystemStorage
from django.db import models

from designer.engine import paths, statuses


class Pipeline(models.Model):
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="pipelines")
    name = models.CharField(max_length=200)
    draft = models.JSONField(help_text="The pipeline document (schema_version 1) being edited")
    revision = models.PositiveIntegerField(default=1, help_text="Bumped on each save; a save of a stale revision is refused")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at"]

    def __str__(self):
        return self.name


class VisibleRuns(models.Manager):
    """Runs not deleted: what every page, API answer and reuse sees (`Run.objects`)."""

    def get_queryset(self):
        return super().get_queryset().filter(deleted_at__isnull=True)


class Run(models.Model):
    STATUSES = statuses.choices(statuses.RUN_STATUSES)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="runs")
    pipeline = models.ForeignKey(Pipeline, null=True, blank=True, on_delete=models.SET_NULL, related_name="runs")
    name = models.CharField(max_length=200)
    snapshot = models.JSONField(help_text="The pipeline as submitted: never changes afterwards")
    status = models.CharField(max_length=16, choices=STATUSES, default=statuses.QUEUED)
    submitted_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    cancel_requested = models.BooleanField(default=False)
    parameter_values = models.JSONField(default=dict, blank=True,
                                        help_text="the pipeline parameters' values it ran with (also in the snapshot)")
    # deleted by its owner: hidden at once; its row and folders go when no other run reuses its
    # outputs any more (retention.py)
    deleted_at = models.DateTimeField(null=True, blank=True, db_index=True)

    objects = VisibleRuns()
    everything = models.Manager()  # deleted ones too: retention.py, and related lookups (nr.run)

    class Meta:
        ordering = ["-submitted_at"]
        base_manager_name = "everything"

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
    # a pending node whose identical twin (same cache key, same owner) is queued or running in
    # another run: it waits for that one and reuses its output (advance.py)
    waits_for = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="waiters")
    # The outbox (designer/pipelines/outbox.py): a queued node's `run_node` message is due at
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


class Worker(models.Model):
    """A Celery worker and what it offers; refreshed by its heartbeat (designer/pipelines/heartbeat.py).

    The row is kept when the worker stops (`stopped_at`), and revived when a worker of the same
    name starts again: the nodes it ran point at it, and their errors name it."""

    hostname = models.CharField(max_length=200, unique=True, help_text="the Celery worker's name (name@machine)")
    machine = models.CharField(max_length=200, blank=True, help_text="the host name of the machine it runs on")
    cpus = models.PositiveIntegerField(default=1)
    gpus = models.PositiveIntegerField(default=0)
    concurrency = models.PositiveIntegerField(default=1)
    started_at = models.DateTimeField(auto_now_add=True)
    last_seen = models.DateTimeField()
    stopped_at = models.DateTimeField(null=True, blank=True, help_text="when it shut down; NULL while it runs, or if it was lost")
    address = models.CharField(max_length=200, blank=True,
                               help_text="where the other workers of a distributed job reach this one")
    weights = models.JSONField(default=dict, blank=True,
                               help_text="its torch hub folder and the pretrained weights files in it: {folder, files}")
    compute_target = models.CharField(max_length=64, blank=True, default="", db_index=True,
                                      help_text="the compute target it joined (WORKER_COMPUTE_TARGET); nodes of that target run here")
    gpu_inventory = models.JSONField(default=list, blank=True,
                                     help_text="the GPUs nvidia-smi lists on its machine: [{index, name, memory_mb}]")
    cuda_problem = models.TextField(blank=True, default="",
                                    help_text="why CUDA could not start although nvidia-smi lists GPUs: it then offers 0 GPUs")
    # one worker = one node of a distributed job: set by a conditional UPDATE (designer/pipelines/workers.py)
    reserved_by = models.ForeignKey("NodeRun", null=True, blank=True, on_delete=models.SET_NULL,
                                    related_name="reserved_workers")

    def __str__(self):
        return self.hostname

    @property
    def units(self) -> int:
        """Processes a node of a distributed job may start here: its GPUs, or else its CPU cores."""
        return self.gpus or self.cpus

    @property
    def unit_name(self) -> str:
        return "GPU(s)" if self.gpus else "CPU core(s)"

    @property
    def label(self) -> str:
        """How errors and the API name it: `<machine>:<worker name>`."""
        return f"{self.machine}:{self.hostname}" if self.machine else self.hostname


class Lease(models.Model):
    """Who holds a job that exactly one process may do at a time: the maintenance loop
    (designer/pipelines/maintenance.py). Taken and renewed by a conditional UPDATE; a holder that
    dies leaves it to expire, and the next process to ask takes it."""

    name = models.CharField(max_length=64, primary_key=True)
    holder = models.CharField(max_length=200, help_text="the process holding it: a worker's name, or maintenance@machine:pid")
    expires_at = models.DateTimeField(help_text="unless renewed by then, another process may take it")

    def __str__(self):
        return f"{self.name} held by {self.holder}"


class NodeLaunch(models.Model):
    """One machine of a distributed node's job: the worker that runs torchrun for node `index`
    (0: the worker that runs the node's task and hosts the rendezvous), and how that went."""

    STATUSES = statuses.choices(statuses.LAUNCH_STATUSES)
    noderun = models.ForeignKey(NodeRun, on_delete=models.CASCADE, related_name="launches")
    index = models.PositiveIntegerField(help_text="0 hosts the rendezvous; torchrun numbers the nodes itself")
    # NULL: node 0 of a job run inline (outside any worker)
    worker = models.ForeignKey(Worker, null=True, blank=True, on_delete=models.SET_NULL, related_name="launches")
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


def _dataset_storage():
    """Files under ARTIFACT_ROOT (read when used, so that tests and deployments can move it)."""
    return FileSystemStorage(location=settings.ARTIFACT_ROOT)


def _dataset_upload_to(instance, filename: str) -> str:
    # a folder of its own per upload: two uploads of the same name never collide; a name such as
    # `../../x.zip` keeps only `x.zip` (paths.safe_filename), so the file stays in that folder
    return paths.dataset_name(instance.owner_id, uuid.uuid4().hex, filename)


class Dataset(models.Model):
    """An uploaded archive of images, reusable in the owner's pipelines (module Dataset)."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="datasets")
    name = models.CharField(max_length=200)
    file = models.FileField(upload_to=_dataset_upload_to, storage=_dataset_storage, max_length=500)
    size = models.PositiveBigIntegerField(default=0, help_text="bytes")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        # a user picks a dataset by its name: two uploads of one name at the same moment cannot both stay
        constraints = [models.UniqueConstraint(fields=["owner", "name"], name="one_dataset_name_per_owner")]

    def __str__(self):
        return self.name

    @property
    def filename(self) -> str:
        return self.file.name.rsplit("/", 1)[-1]


class Sweep(models.Model):
    """A hyperparameter sweep of a pipeline: trials (runs) with sampled parameter values, chosen
    and stopped by an Optuna study stored in this database (designer/pipelines/sweeps.py)."""

    STATUSES = statuses.choices(statuses.SWEEP_STATUSES)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="sweeps")
    pipeline = models.ForeignKey(Pipeline, null=True, blank=True, on_delete=models.SET_NULL, related_name="sweeps")
    name = models.CharField(max_length=200)
    snapshot = models.JSONField(help_text="the pipeline as submitted (schema_version 2): every trial runs it")
    config = models.JSONField(help_text="the sweep configuration (sampling, parameter_space, policy, ...)")
    base_values = models.JSONField(default=dict, blank=True, help_text="values of the pipeline parameters not swept")
    study_name = models.CharField(max_length=200, unique=True)
    status = models.CharField(max_length=16, choices=STATUSES, default=statuses.QUEUED)
    message = models.TextField(blank=True, help_text="why it ended, or why it waits")
    submitted_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    deadline = models.DateTimeField(null=True, blank=True, help_text="submitted_at + max_duration_minutes")
    cancel_requested = models.BooleanField(default=False)
    best_trial = models.ForeignKey("Trial", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["-submitted_at"]

    def __str__(self):
        return f"sweep {self.pk} of {self.name}"

    @property
    def finished(self) -> bool:
        return self.status in statuses.SWEEP_FINISHED


class Trial(models.Model):
    """One trial of a sweep: its sampled values and the run that tries them."""

    STATUSES = statuses.choices(statuses.TRIAL_STATUSES)
    sweep = models.ForeignKey(Sweep, on_delete=models.CASCADE, related_name="trials")
    number = models.PositiveIntegerField(help_text="the Optuna trial number (0, 1, 2, ...)")
    optuna_trial_id = models.PositiveIntegerField()
    run = models.OneToOneField(Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="trial")
    values = models.JSONField(default=dict)
    status = models.CharField(max_length=16, choices=STATUSES, default=statuses.QUEUED)
    value = models.FloatField(null=True, blank=True, help_text="its primary metric at kept_step, else its best")
    kept_step = models.PositiveIntegerField(null=True, blank=True,
                                            help_text="the epoch whose model its training kept, when it says (Train PyTorch Model)")
    epochs = models.PositiveIntegerField(default=0, help_text="steps of the primary metric reported")
    stop_requested = models.BooleanField(default=False, help_text="the policy ended it early")
    stopped_at_step = models.PositiveIntegerField(null=True, blank=True)
    error = models.TextField(blank=True)
    detail = models.TextField(blank=True, help_text="how it ended, in words: an early terminated trial says whether its "
                                                     "script stopped when asked or was ended after the grace")
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["sweep", "number"]
        constraints = [models.UniqueConstraint(fields=["sweep", "number"], name="one_trial_per_number")]

    def __str__(self):
        return f"trial {self.number} of {self.sweep}"

    @property
    def finished(self) -> bool:
        return self.status in statuses.TRIAL_FINISHED

    @property
    def duration(self) -> float | None:
        if self.started_at and self.finished_at:
            return (self.finished_at - self.started_at).total_seconds()
        return None


class RegisteredModel(models.Model):
    """A name under which a user registers trained models, version after version (registry.py)."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="registered_models")
    name = models.CharField(max_length=100)
    # the highest number ever given: a deleted version's number is never given again (a pipeline's
    # Registered model node, or a lineage, that names "digits:3" names one model for good)
    last_version = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["owner", "name"], name="one_model_name_per_owner")]

    def __str__(self):
        return self.name


class ModelVersion(models.Model):
    """One registered version: an immutable copy of a run's trained model (its own folder under
    ARTIFACT_ROOT/models, kept when the run is deleted) and where it came from (lineage)."""

    STATUSES = statuses.choices(statuses.VERSION_STATUSES)
    model = models.ForeignKey(RegisteredModel, on_delete=models.CASCADE, related_name="versions")
    version = models.PositiveIntegerField(help_text="1, 2, 3... per name")
    description = models.TextField(blank=True)
    tags = models.JSONField(default=dict, blank=True, help_text="{name: value}")
    folder = models.CharField(max_length=300, help_text="its model directory, relative to ARTIFACT_ROOT")
    status = models.CharField(max_length=16, choices=STATUSES, default=statuses.PREPARING)
    error = models.TextField(blank=True, help_text="why its packaging failed")
    # its packaging task: sent (again by the maintenance loop until the broker takes it), claimed once
    prepare_sent_at = models.DateTimeField(null=True, blank=True)
    prepare_started_at = models.DateTimeField(null=True, blank=True)
    has_onnx = models.BooleanField(default=False)
    format = models.CharField(max_length=16, default="designer", help_text="what its folder holds (sdk/formats/custom_model.py)")
    size = models.PositiveBigIntegerField(default=0, help_text="bytes of its folder")
    # lineage: the links are kept as long as what they name exists; `lineage` keeps the names,
    # ids, datasets, parameters and best-epoch metrics for good
    run = models.ForeignKey(Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="model_versions")
    pipeline = models.ForeignKey(Pipeline, null=True, blank=True, on_delete=models.SET_NULL, related_name="model_versions")
    node_id = models.CharField(max_length=64, blank=True)
    lineage = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["model", "-version"]
        constraints = [models.UniqueConstraint(fields=["model", "version"], name="one_version_number_per_model")]

    def __str__(self):
        return f"{self.model.name}:{self.version}"


from designer.pipelines.component_models import Component  # noqa: E402,F401 - one of this app's models
from designer.pipelines.endpoint_models import Endpoint, EndpointError, EndpointStats, ServingReplica  # noqa: E402,F401
from designer.pipelines.token_models import ApiToken  # noqa: E402,F401 - one of this app's models
