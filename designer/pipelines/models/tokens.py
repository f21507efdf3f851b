"""A personal API token (tokens.py): what a script sends as `Authorization: Bearer pd_...` instead
of a session and a CSRF token. Only the sha256 of the secret is stored: the secret is shown once,
when the token is made. Kept apart from models.py (which imports it) so that each file stays readable."""
from __future__ import annotations

from django.conf import settings
from django.db import models


class ApiToken(models.Model):
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100, help_text="what the user calls it (the script or machine it is for)")
    prefix = models.CharField(max_length=16, help_text="its first characters, shown to tell tokens apart")
    digest = models.CharField(max_length=64, unique=True, help_text="sha256 of the whole token (the token itself is never stored)")
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True, help_text="set: the token no longer works")

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self):
        return f"{self.name} ({self.prefix}…)"

    @property
    def active(self) -> bool:
        return self.revoked_at is None
