"""The model registry: a registered model and its versions."""
from __future__ import annotations

from django.conf import settings
from django.db import models

from designer.engine import statuses


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
    run = models.ForeignKey("pipelines.Run", null=True, blank=True, on_delete=models.SET_NULL, related_name="model_versions")
    pipeline = models.ForeignKey("pipelines.Pipeline", null=True, blank=True, on_delete=models.SET_NULL, related_name="model_versions")
    node_id = models.CharField(max_length=64, blank=True)
    lineage = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["model", "-version"]
        constraints = [models.UniqueConstraint(fields=["model", "version"], name="one_version_number_per_model")]

    def __str__(self):
        return f"{self.model.name}:{self.version}"
