"""A user's dataset: an uploaded archive or folder, stored under the artifact root."""
from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models

from designer.engine import paths
from designer.pipelines.artifact_store import StoreStorage


def _dataset_storage():
    """Files in the artifact store: under ARTIFACT_ROOT, or in the bucket (read when used, so that
    tests and deployments can move it)."""
    return StoreStorage()


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
