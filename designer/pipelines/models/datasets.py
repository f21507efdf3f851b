"""A user's dataset: an uploaded archive or folder, stored under the artifact root. A name is a data
asset; each upload of that name is its next version (a row of Dataset: its id names that version
for good). DatasetUse records which version each run read (the lineage the Data page shows)."""
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
    """One version of a data asset: an uploaded archive of images, reusable in the owner's pipelines
    (module Dataset). Uploading a name again adds version 2, 3... of it."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="datasets")
    name = models.CharField(max_length=200)
    version = models.PositiveIntegerField(default=1, help_text="1, 2, 3... per name")
    file = models.FileField(upload_to=_dataset_upload_to, storage=_dataset_storage, max_length=500)
    size = models.PositiveBigIntegerField(default=0, help_text="bytes")
    created_at = models.DateTimeField(auto_now_add=True)
    # what the archive holds, read from its listing at upload (datasets/contents.py): images per
    # class, files, the few images the Data page previews; {} for one uploaded before it was kept
    contents = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        # two uploads of one name at the same moment cannot both be its next version
        constraints = [models.UniqueConstraint(fields=["owner", "name", "version"], name="one_dataset_version_per_name")]

    def __str__(self):
        return f"{self.name}:{self.version}"

    @property
    def filename(self) -> str:
        return self.file.name.rsplit("/", 1)[-1]


class DatasetName(models.Model):
    """The highest version number a user's dataset name was ever given: a deleted version's number
    is never given again, so that "digits:3" in a pipeline file, a run or a lineage names one
    archive for good (as a registered model's versions do)."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="dataset_names")
    name = models.CharField(max_length=200)
    last_version = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["owner", "name"], name="one_version_count_per_dataset_name")]


class DatasetUse(models.Model):
    """A run's Dataset node read this version (recorded at submit). While the run is kept, the
    version cannot be deleted (RESTRICT: deleting the run, or the user, removes the record first)."""

    run = models.ForeignKey("pipelines.Run", on_delete=models.CASCADE, related_name="dataset_uses")
    dataset = models.ForeignKey(Dataset, on_delete=models.RESTRICT, related_name="uses")
    node_id = models.CharField(max_length=64)

    class Meta:
        ordering = ["-run_id", "node_id"]
        constraints = [models.UniqueConstraint(fields=["run", "node_id"], name="one_dataset_use_per_node")]
