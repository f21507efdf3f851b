"""The model registry on an S3 bucket (a real server on the loopback): a digits model trained in
this process is registered (its folder copied within the bucket), packaged as a worker does
(downloaded, packaged, kept again), scores new data in a pipeline through a Registered model node
(fetched into the worker's cache), downloads as an archive, is served by the scoring process from
its own cache, and goes from the bucket when deleted. No artifact folder anywhere."""
from __future__ import annotations

import io
import tarfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from designer.pipelines import artifact_store
from designer.pipelines.models import Endpoint, ModelVersion, Run
from designer.pipelines.registry import service as registry
from sdk.formats import scored_dataset
from tests.registry.registry_helpers import add_digits, digits_doc, run_inline
from tests.s3server import running
from tests.serving.helpers import Serving, multipart, request, score_url
from tests.serving.test_registry_flow import batch_inference_doc, wait_for
from training import packaging

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(600)]


@pytest.fixture
def on_bucket(settings, tmp_path):
    with running() as server:
        env = server.env(prefix=server.new_prefix())
        settings.ARTIFACT_STORE = env["ARTIFACT_STORE"]
        settings.ARTIFACT_STORE_ENDPOINT_URL = env["ARTIFACT_STORE_ENDPOINT_URL"]
        settings.ARTIFACT_ROOT = tmp_path / "no-artifact-folder"
        settings.WORKER_CACHE_DIR = tmp_path / "cache"
        yield env


def scored(run: Run) -> pd.DataFrame:
    """Score's table of `run`, read from the bucket."""
    with artifact_store.materialized(run.nodes.get(node_id="score").outputs["scored_dataset"]) as folder:
        return pd.read_parquet(folder / scored_dataset.SCORED_FILE)


def test_register_package_score_download_serve_and_delete_on_a_bucket(on_bucket, owner_client, users, tmp_path):
    dataset = add_digits(users["owner"], tmp_path)
    run = run_inline(users["owner"], digits_doc(dataset, export=False))
    r = owner_client.post("/api/models", {"run": run.id, "node": "train", "name": "digits"}, content_type="application/json")
    assert r.status_code == 201, r.json()
    version = ModelVersion.objects.get(model__name="digits", version=1)
    key = registry.key_of(version)
    assert artifact_store.get().manifest(key) is not None  # its own copy, in the bucket
    registry.prepare(version.id, packaging.package)  # as a worker does: from the bucket, and back
    version.refresh_from_db()
    assert (version.status, version.error, version.has_onnx) == ("ready", "", True)
    assert "model.onnx" in artifact_store.get().manifest(key).files

    again = run_inline(users["owner"], batch_inference_doc(dataset), name="digits batch inference")
    original, batch = scored(run), scored(again)
    columns = [c for c in original.columns if c.startswith(scored_dataset.PROBABILITY_PREFIX)]
    assert len(batch) == len(original) > 0
    assert np.abs(batch[columns].to_numpy() - original[columns].to_numpy()).max() <= 1e-6

    archive = owner_client.get("/api/models/digits/versions/1/download")
    assert archive.status_code == 200
    with tarfile.open(fileobj=io.BytesIO(b"".join(archive.streaming_content)), mode="r:gz") as tar:
        assert "digits-1/model.onnx" in tar.getnames()

    serving = Serving(tmp_path, **on_bucket, WORKER_CACHE_DIR=str(tmp_path / "serving-cache"),
                      ARTIFACT_ROOT=str(tmp_path / "no-artifact-folder"))
    try:
        serving.wait_up()
        r = owner_client.post("/api/endpoints", {"model": "digits", "version": 1}, content_type="application/json")
        assert r.status_code == 201, r.json()
        endpoint = Endpoint.objects.get(name=r.json()["name"])
        serving.wait_serving(endpoint)
        wait_for(lambda: owner_client.get(f"/api/endpoints/{endpoint.name}").json(), lambda e: e["status"] == "healthy")
        image = Path(scored(run)[scored_dataset.IMAGE].iloc[0])  # in this process's cache (the run was inline)
        body, content_type = multipart([("image", image.name, image.read_bytes())])
        status, answer, _ = request(score_url(serving, endpoint), body, content_type, key=endpoint.primary_key)
        assert status == 200 and len(answer["predictions"]) == 1, answer
        owner_client.delete(f"/api/endpoints/{endpoint.name}")
    finally:
        serving.stop()

    assert owner_client.delete("/api/models/digits/versions/1").status_code == 204
    assert artifact_store.get().manifest(key) is None and artifact_store.get().list(key) == []
