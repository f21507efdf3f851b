"""The model registry from a real digits run: register (page API and CLI), versions 1, 2, 3 per
name, lineage, an immutable copy that outlives its run, owner scoping, and every refusal named."""
from __future__ import annotations

import io
import shutil
import tarfile
import time

import pytest
from django.core.management import CommandError, call_command

from designer.engine.graph import PipelineInvalid
from designer.pipelines.models import ModelVersion, RegisteredModel
from designer.pipelines.registry import service as registry
from designer.pipelines.runs import artifacts
from designer.pipelines.runs import service as runs
from tests.pipes import out_path, pipeline
from tests.registry.registry_helpers import EPOCHS, add_digits, digits_doc, run_inline

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def trained(users, tmp_path):
    dataset = add_digits(users["owner"], tmp_path)
    return dataset, run_inline(users["owner"], digits_doc(dataset))


def register(client, **body):
    return client.post("/api/models", body, content_type="application/json")


def test_a_training_registers_as_numbered_versions_with_its_lineage(owner_client, users, trained, tmp_path):
    dataset, run = trained
    r = register(owner_client, run=run.id, node="train", name="digits", description="first try", tags={"data": "sklearn"})
    assert r.status_code == 201, r.json()
    v1 = r.json()
    assert (v1["name"], v1["version"], v1["status"], v1["tags"]) == ("digits", 1, "preparing", {"data": "sklearn"})
    lineage = v1["lineage"]
    assert lineage["run"] == {"id": run.id, "name": run.name} and lineage["pipeline"]["id"] == run.pipeline_id
    assert lineage["node"] == {"id": "train", "kind": "train_pytorch_model", "label": "Train PyTorch Model"}
    assert lineage["datasets"]["training"] == [{"id": dataset, "name": "digits", "version": 1, "node": "dataset"}]
    assert lineage["datasets"]["validation"] == lineage["datasets"]["training"]  # both come from its split
    assert v1["dataset_urls"] == {str(dataset): f"/api/datasets/{dataset}/download"} and v1["run_deleted"] is False
    assert lineage["parameters"]["epochs"] == EPOCHS and lineage["parameters"]["learning_rate"] == 0.05
    assert lineage["started_from"]["label"] == "ResNet" and lineage["started_from"]["parameters"]["model_name"] == "resnet18"
    metrics = lineage["metrics"]
    assert 1 <= metrics["best_epoch"] <= EPOCHS and metrics["validation_loss"] > 0 and "training_loss" in metrics
    assert lineage["classes"] == [str(d) for d in range(10)] and lineage["model_name"] == "resnet18"

    # a second training of the same pipeline (another seed): version 2, through the CLI
    second = run_inline(users["owner"], digits_doc(dataset, seed=2))
    out, err = io.StringIO(), io.StringIO()
    call_command("register_model", str(second.id), "train", name="digits", owner="owner", tag=["seed=2"], stdout=out, stderr=err)
    assert out.getvalue().strip() == "digits:2" and "registered digits version 2" in err.getvalue()
    # Export to ONNX's output: version 3, with its ONNX graph and the trained model it exported
    v3 = register(owner_client, run=second.id, node="export", name="digits").json()
    assert v3["version"] == 3 and v3["has_onnx"] and v3["lineage"]["node"]["id"] == "train"
    folder = registry.folder_of(ModelVersion.objects.get(model__name="digits", version=3))
    assert {"model.pt", "model.yaml", "model.onnx", "preprocessing.json"} <= {p.name for p in folder.iterdir()}

    listed = owner_client.get("/api/models").json()["models"]
    assert [(m["name"], m["latest_version"], m["versions"]) for m in listed] == [("digits", 3, 3)]
    versions = owner_client.get("/api/models/digits").json()["versions"]
    assert [v["version"] for v in versions] == [3, 2, 1] and versions[1]["tags"] == {"seed": "2"}


def test_a_version_is_an_immutable_copy_that_outlives_its_run(owner_client, trained):
    _, run = trained
    v1 = register(owner_client, run=run.id, node="train", name="digits").json()
    version = ModelVersion.objects.get(model__name="digits", version=1)
    folder = registry.folder_of(version)
    run_model = out_path(run.nodes.get(node_id="train").outputs["trained_model"])
    assert folder != run_model and (folder / "model.pt").read_bytes() == (run_model / "model.pt").read_bytes()
    # a deleted version's number is never given again: "digits:2" in a pipeline or a lineage names one model
    assert register(owner_client, run=run.id, node="train", name="digits").json()["version"] == 2
    assert owner_client.delete("/api/models/digits/versions/2").status_code == 204
    assert register(owner_client, run=run.id, node="train", name="digits").json()["version"] == 3
    assert [v["version"] for v in owner_client.get("/api/models/digits").json()["versions"]] == [3, 1]
    assert owner_client.delete("/api/models/digits/versions/3").status_code == 204
    shutil.rmtree(artifacts.node_dir(run.id, "train").parent)  # the run and its files are deleted
    run.delete()
    again = owner_client.get("/api/models/digits/versions/1").json()
    assert again["lineage"] == v1["lineage"] and again["run_url"] is None  # its lineage is kept by value
    assert again["run_deleted"] is True
    assert (folder / "model.pt").is_file()


def test_strangers_see_nothing_and_cannot_register_others_runs(owner_client, stranger_client, trained):
    _, run = trained
    assert register(owner_client, run=run.id, node="train", name="digits").status_code == 201
    for url in ("/api/models/digits", "/api/models/digits/versions/1", "/api/models/digits/versions/1/download"):
        assert stranger_client.get(url).status_code == 404, url
    assert stranger_client.delete("/api/models/digits/versions/1").status_code == 404
    assert stranger_client.get("/api/models").json()["models"] == []
    r = register(stranger_client, run=run.id, node="train", name="mine")
    assert r.status_code == 404 and r.json()["error"] == f"you have no run {run.id}"
    with pytest.raises(CommandError, match=f"you have no run {run.id}"):
        call_command("register_model", str(run.id), "train", name="mine", owner="stranger")


@pytest.mark.parametrize("body, status, error", [
    ({"node": "score", "name": "m"}, 400, "Score Image Model (score) outputs no model: register the output of Train PyTorch Model"),
    ({"node": "nope", "name": "m"}, 400, "has no node 'nope'"),
    ({"node": "train", "name": "../x"}, 400, "model name '../x' is not usable"),
    ({"node": "train", "name": "m", "tags": ["a"]}, 400, "tags must be an object"),
    ({"node": "train"}, 400, "missing name"),
])
def test_registering_anything_but_a_completed_model_is_refused_by_name(owner_client, trained, body, status, error):
    _, run = trained
    r = register(owner_client, run=run.id, **body)
    assert r.status_code == status and error in r.json()["error"], r.json()
    assert not ModelVersion.objects.exists()


def test_a_failed_training_cannot_be_registered(owner_client, trained):
    _, run = trained
    run.nodes.filter(node_id="train").update(status="failed", error="boom")
    r = register(owner_client, run=run.id, node="train", name="m")
    assert r.status_code == 400
    assert r.json()["error"] == (f"Train PyTorch Model (train) has not completed in run {run.id} (it is failed): "
                                 "only a completed model can be registered")


@pytest.mark.production
def test_a_worker_packages_a_registered_version_for_download_and_endpoints(owner_client, trained, start_worker):
    """Registering sends the packaging to the workers (a Celery task by name); the version is then
    ready, and its archive holds the torch.export program and the ONNX graph."""
    _, run = trained
    start_worker("packager", concurrency=1)
    assert register(owner_client, run=run.id, node="train", name="digits").status_code == 201
    version = wait_for_version("digits", 1)
    assert (version.status, version.error, version.has_onnx) == ("ready", "", True)
    r = owner_client.get("/api/models/digits/versions/1/download")
    assert r.status_code == 200 and r["Content-Disposition"] == 'attachment; filename="digits-1.tar.gz"'
    with tarfile.open(fileobj=io.BytesIO(b"".join(r.streaming_content)), mode="r:gz") as tar:
        names = set(tar.getnames())
    assert {f"digits-1/{n}" for n in ("model.pt", "model.yaml", "model.pt2", "model.onnx", "preprocessing.json",
                                      "predict.py", "preprocess.py")} <= names, names


def wait_for_version(name: str, number: int, timeout: float = 300) -> ModelVersion:
    deadline = time.monotonic() + timeout
    while (version := ModelVersion.objects.get(model__name=name, version=number)).status == "preparing":
        assert time.monotonic() < deadline, "the version is still being packaged"
        time.sleep(0.2)
    return version


def test_a_registered_model_node_binds_only_its_owners_versions_at_submit(users):
    mine = RegisteredModel.objects.create(owner=users["owner"], name="digits")
    for number, status in ((1, "ready"), (2, "ready"), (3, "preparing")):
        ModelVersion.objects.create(model=mine, version=number, status=status,
                                    folder=f"models/{users['owner'].id}/{mine.id}/{number}")
    theirs = RegisteredModel.objects.create(owner=users["stranger"], name="secret")
    ModelVersion.objects.create(model=theirs, version=1, status="ready", folder=f"models/{users['stranger'].id}/{theirs.id}/1")

    def bound(**params):
        doc = pipeline([{"id": "m", "kind": "registered_model", "parameters": params}], [])
        return registry.bind(users["owner"], doc)["nodes"][0]["parameters"]

    latest = bound(model="digits", stored_folder="/etc")
    assert latest["version"] == 2 and latest["stored_folder"].endswith(f"models/{users['owner'].id}/{mine.id}/2")
    assert bound(model="digits", version=3)["stored_folder"].endswith("/3")
    for params, message, param in (({"model": "secret"}, "you have no registered model 'secret'", "model"),
                                   ({"model": "digits", "version": 7}, "model 'digits' has no version 7", "version"),
                                   ({}, "no model chosen", "model")):
        with pytest.raises(PipelineInvalid) as e:
            runs.submit(users["owner"], pipeline([{"id": "m", "kind": "registered_model", "parameters": params}], []))
        problem = e.value.problems[0]
        assert (problem.message, problem.node, problem.param) == (f"Registered model: {message}", "m", param)
