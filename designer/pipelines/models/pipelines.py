"""A user's pipeline: its draft and revision."""
from __future__ import annotations

from django.conf import settings
from django.db import models


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
