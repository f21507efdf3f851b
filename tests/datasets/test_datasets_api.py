"""Datasets: upload through the API, ownership, and a Dataset node feeding the image modules."""
import io
import zipfile
from pathlib import Path

import pytest
import yaml
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from PIL import Image

from designer.engine import graph
from designer.pipelines.models import Dataset
from designer.pipelines.runs import service as runs
from tests.pipes import link, node, out_path, pipeline

pytestmark = pytest.mark.django_db


def image_zip(classes=("cats", "dogs"), per_class=3) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for c, cls in enumerate(classes):
            for i in range(per_class):
                png = io.BytesIO()
                Image.new("RGB", (12, 12), (40 * c, 10 * i, 99)).save(png, "PNG")
                z.writestr(f"pets/{cls}/{i}.png", png.getvalue())
    return buf.getvalue()


def upload(client, data: bytes, filename="pets.zip", **extra):
    return client.post("/api/datasets", {"file": SimpleUploadedFile(filename, data), **extra})


def pets_pipeline(dataset_id, **dataset_params):
    return pipeline(
        [node("data", "dataset", **({"dataset": dataset_id} if dataset_id is not None else {}), **dataset_params), node("convert", "convert_to_image_directory"),
         node("split", "split_image_directory", fraction=0.5)],
        [link("data", "convert", "dataset", "input_dataset"), link("convert", "split", "image_directory", "image_directory")])


def test_signing_in_is_required(client):
    assert client.get("/api/datasets").status_code == 401
    assert upload(client, image_zip()).status_code == 401


def test_an_owner_uploads_lists_and_deletes_a_dataset(owner_client, users):
    r = upload(owner_client, image_zip(), name="My pets")
    assert r.status_code == 201, r.content
    ds = r.json()
    assert ds["name"] == "My pets" and ds["filename"] == "pets.zip" and ds["size"] > 0
    stored = Path(Dataset.objects.get(pk=ds["id"]).file.path)
    assert stored.is_file() and stored.is_relative_to(Path(settings.ARTIFACT_ROOT) / "datasets" / str(users["owner"].id))
    assert [d["id"] for d in owner_client.get("/api/datasets").json()["datasets"]] == [ds["id"]]
    assert owner_client.get(f"/api/datasets/{ds['id']}").json()["name"] == "My pets"
    assert owner_client.delete(f"/api/datasets/{ds['id']}").status_code == 204
    assert not stored.exists() and not Dataset.objects.exists()
    assert owner_client.get("/api/datasets").json()["datasets"] == []


@pytest.mark.parametrize(("filename", "data", "message"), [
    ("notes.txt", b"hello", "notes.txt is not an archive of images: upload a .zip"),
    ("photo.png", b"\x89PNG....", "photo.png is not an archive of images"),
    ("fake.zip", b"this is not a zip", "fake.zip is named like an archive but its content is not one"),
    ("fake.tar.gz", b"nor a tar", "fake.tar.gz is named like an archive but its content is not one"),
])
def test_a_non_archive_is_refused_with_a_message(owner_client, filename, data, message):
    r = upload(owner_client, data, filename)
    assert r.status_code == 400 and message in r.json()["error"]
    assert not Dataset.objects.exists()


def test_an_upload_without_a_file_is_refused(owner_client):
    r = owner_client.post("/api/datasets", {"name": "nothing"})
    assert r.status_code == 400 and "field named 'file'" in r.json()["error"]


def test_an_oversized_upload_is_refused_with_413(owner_client, settings):
    settings.DATASET_MAX_UPLOAD_BYTES = 100 * 1024
    r = upload(owner_client, bytes(150 * 1024), "big.zip")
    assert r.status_code == 413
    assert r.json()["error"] == "the upload is 150 KB, larger than the limit of 100 KB (setting DATASET_MAX_UPLOAD_MB)"
    r = upload(owner_client, bytes(3 * 1024 * 1024), "bigger.zip")  # refused from its Content-Length, unread
    assert r.status_code == 413 and r.json()["error"].startswith("the upload is 3.0 MB, larger than the limit of 100 KB")
    assert not Dataset.objects.exists()


def test_a_stranger_can_neither_see_nor_delete_a_dataset(owner_client, stranger_client):
    ds = upload(owner_client, image_zip()).json()
    assert stranger_client.get("/api/datasets").json()["datasets"] == []
    assert stranger_client.get(f"/api/datasets/{ds['id']}").status_code == 404
    assert stranger_client.delete(f"/api/datasets/{ds['id']}").status_code == 404
    assert Dataset.objects.filter(pk=ds["id"]).exists()


def test_an_owner_downloads_the_archive_as_uploaded_and_a_stranger_cannot(owner_client, stranger_client):
    data = image_zip()
    ds = upload(owner_client, data).json()
    assert ds["download_url"] == f"/api/datasets/{ds['id']}/download"
    r = owner_client.get(ds["download_url"])
    assert r.status_code == 200 and b"".join(r.streaming_content) == data
    assert 'attachment; filename="pets.zip"' == r["Content-Disposition"]
    assert stranger_client.get(ds["download_url"]).status_code == 404
    Path(Dataset.objects.get(pk=ds["id"]).file.path).unlink()  # lost from the artifact store
    r = owner_client.get(ds["download_url"])
    assert r.status_code == 410 and r.json()["error"] == "the file of dataset 'pets.zip' is missing from the artifact store"


def test_a_dataset_feeds_convert_and_split(owner_client, users):
    ds = upload(owner_client, image_zip()).json()
    run = runs.submit(users["owner"], pets_pipeline(ds["id"]), inline=True)
    run.refresh_from_db()
    assert run.status == "completed", {nr.node_id: nr.error for nr in run.nodes.all()}
    outputs = {nr.node_id: nr.outputs for nr in run.nodes.all()}
    convert_meta = yaml.safe_load((out_path(outputs["convert"]["image_directory"]) / "_meta.yaml").read_text())
    assert convert_meta["classes"] == ["cats", "dogs"] and convert_meta["count"] == 6
    first = yaml.safe_load((out_path(outputs["split"]["results_dataset1"]) / "_meta.yaml").read_text())
    assert first["count"] == 4  # round(3 x 0.5) = 2 per class
    # the run's snapshot holds the owner's file, set by the server
    data = next(n for n in run.snapshot["nodes"] if n["id"] == "data")
    assert data["parameters"]["stored_file"] == Dataset.objects.get(pk=ds["id"]).file.path


def test_a_stranger_cannot_use_someone_elses_dataset(owner_client, stranger_client, users):
    ds = upload(owner_client, image_zip()).json()
    with pytest.raises(graph.PipelineInvalid, match=rf"Dataset, parameter 'dataset': you have no dataset with id {ds['id']}"):
        runs.submit(users["stranger"], pets_pipeline(ds["id"]))
    # nor by writing the owner's path into the document: the server replaces it with the stranger's own file
    owners_file = Dataset.objects.get(pk=ds["id"]).file.path
    own = upload(stranger_client, image_zip(classes=("birds",))).json()
    run = runs.submit(users["stranger"], pets_pipeline(own["id"], stored_file=owners_file), inline=True)
    data = next(n for n in run.snapshot["nodes"] if n["id"] == "data")
    assert data["parameters"]["stored_file"] == Dataset.objects.get(pk=own["id"]).file.path != owners_file
    convert = run.nodes.get(node_id="convert")
    assert yaml.safe_load((out_path(convert.outputs["image_directory"]) / "_meta.yaml").read_text())["classes"] == ["birds"]


def test_a_pipeline_without_a_chosen_dataset_cannot_run(users):
    with pytest.raises(graph.PipelineInvalid, match="Dataset, parameter 'dataset': no dataset chosen"):
        runs.submit(users["owner"], pets_pipeline(None))


def test_a_deleted_datasets_node_fails_with_a_clear_error(owner_client, users):
    ds = upload(owner_client, image_zip()).json()
    path = Path(Dataset.objects.get(pk=ds["id"]).file.path)
    doc = pets_pipeline(ds["id"])
    with pytest.MonkeyPatch.context() as mp:  # the file vanishes between submission and the run
        mp.setattr(runs, "dispatch", lambda ids: path.unlink())
        run = runs.submit(users["owner"], doc)
    runs.run_inline(run.id)
    data = run.nodes.get(node_id="data")
    assert data.status == "failed" and "InvalidDatasetError: Dataset: the file of dataset" in data.error


def test_the_add_dataset_command_stores_a_folder_as_a_zip(tmp_path, users):
    from django.core.management import call_command

    with zipfile.ZipFile(io.BytesIO(image_zip())) as z:
        z.extractall(tmp_path / "unpacked")
    out = io.StringIO()
    call_command("add_dataset", str(tmp_path / "unpacked" / "pets"), owner="owner", name="pets", stdout=out)
    ds = Dataset.objects.get(pk=int(out.getvalue()))
    assert ds.owner == users["owner"] and ds.filename == "pets.zip"
    with zipfile.ZipFile(ds.file.path) as z:
        assert min(z.namelist()) == "cats/0.png"
