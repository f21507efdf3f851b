"""From a real digits run to a working endpoint, and back onto the canvas: the registered model
(packaged on the torch side) scores new data in a pipeline exactly as its run did, is fine-tuned
on a dataset of other classes, and, deployed, answers the probabilities of Score Image Model."""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from designer.pipelines.models import Endpoint, ModelVersion, Run
from designer.pipelines.registry import service as registry
from sdk.formats import model as model_format
from sdk.formats import scored_dataset
from tests.pipes import link, node, out_path
from tests.registry.registry_helpers import add_digits, digits_doc, run_inline, scored_table
from tests.serving.helpers import multipart, request, score_url
from training import packaging

pytestmark = pytest.mark.django_db(transaction=True)
TOLERANCE = 1e-5  # the issue's: ONNX Runtime against torch, float32


@pytest.fixture
def registered(owner_client, users, tmp_path):
    """Digits trained once (inline), registered as digits:1 and packaged as a worker would."""
    dataset = add_digits(users["owner"], tmp_path)
    run = run_inline(users["owner"], digits_doc(dataset, export=False))
    r = owner_client.post("/api/models", {"run": run.id, "node": "train", "name": "digits"}, content_type="application/json")
    assert r.status_code == 201, r.json()
    version = ModelVersion.objects.get(model__name="digits", version=1)
    registry.prepare(version.id, packaging.package)
    version.refresh_from_db()
    assert (version.status, version.error, version.has_onnx) == ("ready", "", True)
    return dataset, run, version


def batch_inference_doc(dataset: int) -> dict:
    """The digits pipeline with the registered model in place of ResNet + Train PyTorch Model."""
    doc = digits_doc(dataset, export=False)
    doc["nodes"] = [n for n in doc["nodes"] if n["id"] not in ("resnet", "train")] + [
        node("model", "registered_model", model="digits")]
    doc["links"] = [x for x in doc["links"] if "train" not in (x["from"]["node"], x["to"]["node"])] + [
        link("model", "score", "trained_model", "trained_model", lid="l-model")]
    return doc


def test_a_registered_model_scores_new_data_as_its_run_did(users, registered):
    dataset, run, _ = registered
    again = run_inline(users["owner"], batch_inference_doc(dataset), name="digits batch inference")
    model_node = next(n for n in again.snapshot["nodes"] if n["id"] == "model")
    assert model_node["parameters"]["version"] == 1  # the run records the version it used
    assert again.nodes.get(node_id="split").status == "reused"  # the same images, taken from the first run
    original, batch = scored_table(run), scored_table(again)
    assert list(batch.columns) == list(original.columns) and len(batch) == len(original) > 0
    assert (batch[scored_dataset.SCORED_LABELS] == original[scored_dataset.SCORED_LABELS]).all()
    columns = [c for c in original.columns if c.startswith(scored_dataset.PROBABILITY_PREFIX)]
    assert np.abs(batch[columns].to_numpy() - original[columns].to_numpy()).max() <= 1e-6


def test_fine_tuning_a_registered_model_on_other_classes_replaces_its_head(users, registered, tmp_path):
    _, _, _ = registered
    letters = add_digits(users["owner"], tmp_path, "three digits", classes={"0": "zero", "1": "one", "7": "seven"})
    doc = batch_inference_doc(letters)
    doc["nodes"] = [n for n in doc["nodes"] if n["id"] not in ("score", "evaluate")] + [
        node("train", "train_pytorch_model", epochs=1, batch_size=8, learning_rate=0.01, freeze_backbone=True)]
    doc["links"] = [x for x in doc["links"] if x["to"]["node"] not in ("score", "evaluate")] + [
        link("model", "train", "trained_model", "untrained_model", lid="f1"),
        link("apply_train", "train", "transformed_image_directory", "training_dataset", lid="f2"),
        link("apply_val", "train", "transformed_image_directory", "validation_dataset", lid="f3")]
    run = run_inline(users["owner"], doc, name="fine-tune")
    info = model_format.read_info(out_path(run.nodes.get(node_id="train").outputs["trained_model"]))
    assert info["classes"] == ["one", "seven", "zero"]
    log = (out_path(run.nodes.get(node_id="train").outputs["trained_model"]).parent / "logs").rglob("*.txt")
    text = "\n".join(p.read_text() for p in log)
    assert "replaced" in text and "head" in text, text[-2000:]


def test_the_endpoint_answers_the_probabilities_of_score(owner_client, registered, serving):
    _, run, _ = registered
    r = owner_client.post("/api/endpoints", {"model": "digits", "version": 1}, content_type="application/json")
    assert r.status_code == 201, r.json()
    endpoint = Endpoint.objects.get(name=r.json()["name"])
    serving.wait_serving(endpoint)
    shown = wait_for(lambda: owner_client.get(f"/api/endpoints/{endpoint.name}").json(), lambda e: e["status"] == "healthy")
    assert shown["status_message"] == "serving version 1 on 1 serving process"
    table = scored_table(Run.objects.get(pk=run.pk))
    raw = pd_images(run)
    picked = table.head(6)
    body, content_type = multipart([("image", name, raw[name]) for name in picked[scored_dataset.IMAGE]])
    status, answer, _ = request(score_url(serving, endpoint), body, content_type, key=endpoint.primary_key)
    assert status == 200, answer
    assert answer["classes"] == [str(d) for d in range(10)] and len(answer["predictions"]) == len(picked)
    for prediction, (_, row) in zip(answer["predictions"], picked.iterrows()):
        expected = {c: row[scored_dataset.probability_column(c)] for c in answer["classes"]}
        assert max(abs(prediction["probabilities"][c] - expected[c]) for c in expected) <= TOLERANCE
        assert prediction["label"] == row[scored_dataset.SCORED_LABELS]


def wait_for(read, until, timeout: float = 30):
    """`read()` once `until` holds of it (the serving process reports every SERVING_FLUSH_SECONDS)."""
    deadline = time.monotonic() + timeout
    while not until(value := read()):
        assert time.monotonic() < deadline, value
        time.sleep(0.1)
    return value


def pd_images(run: Run) -> dict[str, bytes]:
    """The bytes of every image Score scored in `run`, by file name."""
    import pandas as pd

    folder = out_path(run.nodes.get(node_id="score").outputs["scored_dataset"])
    paths = pd.read_parquet(folder / scored_dataset.SCORED_FILE)[scored_dataset.IMAGE]
    return {Path(p).name: Path(p).read_bytes() for p in paths}
