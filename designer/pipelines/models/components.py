"""A component a user uploaded (components.py): one row per version of a kind, its files an
immutable copy under ARTIFACT_ROOT/components/<owner id>/<component id>/. Kept apart from
models.py (which imports it) so that each file stays readable."""
from __future__ import annotations

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import models

PERMISSION = "pipelines.add_component"  # to add components, and to run the ones added


def may_run_components(owner) -> bool:
    """Whether a user's uploaded components are offered and run: while they hold the permission
    (and are active); withdrawn, their code runs no more. owner: a user or a user id."""
    user = owner if hasattr(owner, "has_perm") else get_user_model().objects.filter(pk=owner).first()
    return user is not None and user.has_perm(PERMISSION)


class Component(models.Model):
    """One version of a user's component (a component file and its code folder). Adding one is a
    privilege (the `pipelines.add_component` permission, granted in the admin): its command runs
    on the workers."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="components")
    kind = models.CharField(max_length=64)
    version = models.PositiveIntegerField()
    label = models.CharField(max_length=200)
    category = models.CharField(max_length=200, blank=True)
    folder = models.CharField(max_length=300, help_text="its folder (component file and code), relative to ARTIFACT_ROOT")
    file = models.CharField(max_length=300, help_text="its component file, relative to its folder")
    digest = models.CharField(max_length=64, help_text="sha256 of its component file and code")
    declaration = models.JSONField(default=dict, blank=True, help_text="what the module declares (describe())")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["kind", "-version"]
        constraints = [models.UniqueConstraint(fields=["owner", "kind", "version"], name="one_component_version_per_owner")]

    def __str__(self):
        return f"{self.kind} v{self.version}"
