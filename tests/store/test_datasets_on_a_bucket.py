"""The Data page on an S3 bucket (a real server on the loopback): an upload's classes are counted at
upload, a preview image is read back from the bucket, and a version uploaded before contents were
kept has its classes read from the bucket's archive by ranged reads (its listing and nothing else)."""
from __future__ import annotations

import io
import os
import zipfile

import pytest

from designer.pipelines import artifact_store
from designer.pipelines.datasets import service as datasets
from designer.pipelines.models import Dataset
from tests.datasets.test_datasets_api import image_zip, upload
from tests.store.test_registry_on_a_bucket import on_bucket  # noqa: F401 - a fixture: settings on a fresh prefix

pytestmark = pytest.mark.django_db


def pets_with_a_large_file() -> bytes:
    """Two classes of two images, and 2 MB that is not an image (stored as it is)."""
    buf = io.BytesIO(image_zip(classes=("cats", "dogs"), per_class=2))
    with zipfile.ZipFile(buf, "a", compression=zipfile.ZIP_STORED) as z:
        z.writestr("pets/readme.bin", os.urandom(2_000_000))
    return buf.getvalue()


def test_a_versions_classes_and_preview_come_from_the_bucket(on_bucket, owner_client, users):  # noqa: F811
    assert artifact_store.is_remote()
    ds = upload(owner_client, pets_with_a_large_file(), "pets.zip", name="pets").json()
    assert ds["contents"]["classes"] == {"cats": 2, "dogs": 2} and ds["size"] > 2_000_000
    thumb = owner_client.get(f"/data/versions/{ds['id']}/preview/1")
    assert thumb.status_code == 200 and thumb.content[:4] == b"\x89PNG"
    Dataset.objects.filter(pk=ds["id"]).update(contents={})  # as one uploaded before contents were kept
    read = []
    store = artifact_store.get()
    real = store.read_range

    def counted(key, offset, length):
        data = real(key, offset, length)
        read.append(len(data))
        return data

    store.read_range = counted
    try:
        found = datasets.contents_of(Dataset.objects.get(pk=ds["id"]))
    finally:
        store.read_range = real
    assert found["classes"] == {"cats": 2, "dogs": 2} and found["images"] == 4
    assert 0 < sum(read) < 400_000  # the archive's end and its listing, not its 2 MB
    assert "cats" in owner_client.get("/data/pets/").content.decode()
