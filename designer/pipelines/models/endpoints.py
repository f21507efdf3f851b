"""The models of real-time serving: endpoints (which registered version they serve, their keys),
the serving processes (designer/serving) and their counts and errors. One of this app's model
modules (models.py names it)."""
from __future__ import annotations

from django.conf import settings
from django.db import models


class Endpoint(models.Model):
    """A real-time scoring endpoint: a name (global: it is in the scoring URL), the version it
    serves, and two keys (regenerate one while clients move to the other). Serving processes
    (designer/serving) poll these rows; `revision` tells them that something changed."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="endpoints")
    name = models.CharField(max_length=64, unique=True)
    version = models.ForeignKey("ModelVersion", on_delete=models.PROTECT, related_name="endpoints")
    primary_key = models.CharField(max_length=64)
    secondary_key = models.CharField(max_length=64)
    description = models.TextField(blank=True)
    # the original's entry script (init() once, run(raw_data) per request), run by the serving
    # processes in a process of its own; empty: the version's ONNX image classifier answers
    entry_script = models.TextField(blank=True)
    entry_script_name = models.CharField(max_length=100, blank=True, help_text="its file name, e.g. score.py")
    revision = models.PositiveIntegerField(default=1)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name


class ServingReplica(models.Model):
    """A serving process (designer/serving), refreshed by its heartbeat: what it has loaded."""

    name = models.CharField(max_length=200, unique=True, help_text="machine:pid")
    started_at = models.DateTimeField(auto_now_add=True)
    last_seen = models.DateTimeField()
    loaded = models.JSONField(default=dict, blank=True,
                              help_text="{endpoint name: {version: id, revision: n, error: text}}")

    def __str__(self):
        return self.name


class EndpointStats(models.Model):
    """One replica's counts for one endpoint since it started serving it (the page adds them up)."""

    endpoint = models.ForeignKey("Endpoint", on_delete=models.CASCADE, related_name="stats")
    replica = models.CharField(max_length=200)
    requests = models.PositiveBigIntegerField(default=0)
    errors = models.PositiveBigIntegerField(default=0)
    latency = models.JSONField(default=list, blank=True, help_text="counts per bucket of designer/engine/latency.py")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["endpoint", "replica"], name="one_stats_row_per_replica")]


class EndpointError(models.Model):
    """A request an endpoint refused or failed (the most recent are kept)."""

    endpoint = models.ForeignKey("Endpoint", on_delete=models.CASCADE, related_name="errors")
    at = models.DateTimeField()
    status = models.PositiveIntegerField()
    message = models.TextField()

    class Meta:
        ordering = ["-at", "-id"]
