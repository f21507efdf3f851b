"""A sweep and its trials."""
from __future__ import annotations

from django.conf import settings
from django.db import models

from designer.engine import statuses
from designer.pipelines.models.runs import Source


class Sweep(models.Model):
    """A hyperparameter sweep of a pipeline: trials (runs) with sampled parameter values, chosen
    and stopped by an Optuna study stored in this database (designer/pipelines/sweeps/service.py)."""

    STATUSES = statuses.choices(statuses.SWEEP_STATUSES)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="sweeps")
    pipeline = models.ForeignKey("pipelines.Pipeline", null=True, blank=True, on_delete=models.SET_NULL, related_name="sweeps")
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
    # as a run's (models/runs.py): what the Jobs page shows; its trials take its experiment
    experiment = models.CharField(max_length=200, blank=True, help_text="a group of runs; the pipeline's name unless given")
    tags = models.JSONField(default=dict, blank=True)
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.UNKNOWN)

    class Meta:
        ordering = ["-submitted_at"]
        indexes = [models.Index(fields=["owner", "-submitted_at"], name="sweep_owner_submitted")]

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
    run = models.OneToOneField("pipelines.Run", null=True, blank=True, on_delete=models.SET_NULL, related_name="trial")
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
