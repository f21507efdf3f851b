"""The model registry and endpoints in the browser: the models list, a model's page (lineage,
metrics, classes, tags, download, a failed version's error, a refused delete), Deploy landing on
the endpoint's page (status, masked key, curl), its live figures, key regeneration and a version
switch; the endpoints list; a stranger's 404. Rows are made directly here where no training is
needed (a version's folder holds a model.yaml, enough for the page and the archive); the Register
dialog registers the output of a real (small) digits training, then deploys it: three clicks."""
import json
import subprocess
import tarfile
from pathlib import Path

import pytest
import yaml
from django.conf import settings
from django.utils import timezone

from designer.engine import latency
from designer.pipelines.endpoints import service as endpoints
from designer.pipelines.models import (
    Dataset,
    Endpoint,
    EndpointError,
    EndpointStats,
    Event,
    ModelVersion,
    NodeRun,
    Pipeline,
    RegisteredModel,
    Run,
    ServingReplica,
)
from designer.pipelines.runs.api import EMPTY_PIPELINE
from tests.conftest import ROOT, TEST_DATA, may_add_components
from tests.e2e.conftest import shot_dir
from tests.e2e.helpers import drag, inside, node, open_designer, overlap, saved
from tests.machine import patience
from tests.modules.model_helpers import one_thread  # noqa: F401 - a fixture
from tests.registry.registry_helpers import add_digits, digits_doc, run_inline
from tests.serving.helpers import Serving, png

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]
CLASSES = [str(d) for d in range(10)]


def lineage(run, pipeline, accuracy, training_id=1):
    return {
        "run": {"id": run.id, "name": run.name}, "pipeline": {"id": pipeline.id, "name": pipeline.name},
        "node": {"id": "train", "kind": "train_pytorch_model", "label": "Train PyTorch Model"},
        "datasets": {"training": [{"id": training_id, "name": "digits-train", "node": "dataset"}],
                     "validation": [{"id": 99999, "name": "digits-holdout", "node": "holdout"}]},  # deleted since
        "parameters": {"epochs": 4, "learning_rate": 0.05, "batch_size": 16},
        "started_from": {"node": "resnet", "kind": "resnet", "label": "ResNet", "parameters": {"model_name": "resnet18"}},
        "metrics": {"best_epoch": 3, "epochs_run": 4, "validation_loss": 0.0912, "validation_top1_accuracy": accuracy},
        "model_name": "resnet18", "classes": CLASSES,
    }


def seed_model(owner, name="digits", versions=(("ready", ""), ("ready", ""), ("failed", "packaging failed: ONNX export refused"))):
    """A model with one version per (status, error), each with a run of a pipeline and a folder."""
    pipeline = Pipeline.objects.create(owner=owner, name="digits pipeline", draft=dict(EMPTY_PIPELINE))
    model = RegisteredModel.objects.create(owner=owner, name=name)
    data = Dataset.objects.create(owner=owner, name="digits-train", file=f"datasets/{owner.id}/seed/digits-train.zip")
    for number, (status, error) in enumerate(versions, 1):
        run = Run.objects.create(owner=owner, pipeline=pipeline, name=f"run {number}", snapshot=dict(EMPTY_PIPELINE), status="completed")
        folder = Path(settings.ARTIFACT_ROOT) / "models" / str(owner.id) / str(model.id) / str(number)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "model.yaml").write_text(yaml.safe_dump({"classes": CLASSES, "model_name": "resnet18"}))
        ModelVersion.objects.create(
            model=model, version=number, status=status, error=error, folder=str(folder.relative_to(settings.ARTIFACT_ROOT)),
            size=2_400_000, has_onnx=status == "ready", run=run, pipeline=pipeline, node_id="train",
            description=f"digits, try {number}", tags={"data": "sklearn", "seed": str(number)},
            lineage=lineage(run, pipeline, 0.9 + number / 100, data.id))
    return model


def healthy(endpoint, requests=100):
    """A serving process that has loaded the endpoint's version, with figures and two refusals."""
    ServingReplica.objects.update_or_create(name="test:1", defaults={
        "last_seen": timezone.now() + timezone.timedelta(minutes=5),
        "loaded": {endpoint.name: {"version": endpoint.version_id, "revision": endpoint.revision}}})
    counts = latency.empty()
    latency.add(counts, 4.0, requests - requests // 10)
    latency.add(counts, 12.0, requests // 10)
    EndpointStats.objects.update_or_create(endpoint=endpoint, replica="test:1",
                                           defaults={"requests": requests, "errors": 2, "latency": counts})
    if not EndpointError.objects.filter(endpoint=endpoint).exists():
        EndpointError.objects.create(endpoint=endpoint, at=timezone.now(), status=400, message="image 1 (cat.txt): not an image")
        EndpointError.objects.create(endpoint=endpoint, at=timezone.now(), status=401, message="wrong key")


def full_shot(page, request, name):
    page.screenshot(path=str(shot_dir(request) / f"{name}.png"), full_page=True)


def both_widths(page, request, name):
    for width in (1440, 1024):
        page.set_viewport_size({"width": width, "height": 900})
        full_shot(page, request, f"{name}-{width}")
        overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
        assert overflow <= 0, f"{name} at {width} px is {overflow} px wider than the window"


def test_a_models_page_shows_lineage_metrics_and_deploy_lands_on_a_working_endpoint_page(page, users, request):
    owner = users["owner"]
    model = seed_model(owner)
    page.goto(f"{page.base}/models/")
    row = page.locator("#models tr[data-model=digits]")
    assert row.locator("td").nth(1).inner_text() == "3" and row.locator("td").nth(3).inner_text() == "3"
    assert row.locator(".badge").inner_text() == "failed"
    assert row.locator(".earlier-ready").inner_text() == "2 earlier ready"  # the model is still usable
    both_widths(page, request, "models")

    row.locator("a", has_text="digits").click()
    page.wait_for_selector("html[data-model-loaded]")
    assert page.locator("section.version").count() == 3
    assert page.inner_text("#model-facts") == "3 versions"
    v2 = page.locator("section.version[data-version='2']")
    assert "Version 2" in v2.locator("h2").inner_text() and v2.locator(".badge").inner_text() == "ready"
    run2 = model.versions.get(version=2).run
    assert v2.locator("a.run-link").get_attribute("href") == f"/pipelines/{run2.pipeline_id}/?run={run2.id}"
    assert v2.locator("a.run-link").inner_text() == f"#{run2.id} run 2"
    assert v2.locator("a.pipeline-link").inner_text() == "digits pipeline"
    assert v2.locator(".datasets-training").inner_text() == "digits-train"
    data = Dataset.objects.get(name="digits-train")
    assert v2.locator(".datasets-training a.dataset-link").get_attribute("href") == f"/api/datasets/{data.id}/download"
    assert v2.locator(".datasets-validation").inner_text() == "digits-holdout (deleted)"
    lineage_text = v2.locator("dl.lineage").inner_text()
    assert "ResNet (resnet18)" in lineage_text and "Train PyTorch Model (train)" in lineage_text
    metrics = v2.locator("dl.metrics").inner_text()
    assert "Best epoch\n3" in metrics and "0.0912" in metrics and "92.00%" in metrics
    assert v2.locator("ul.classes li").all_inner_texts() == CLASSES
    assert v2.locator("ul.tags li").all_inner_texts() == ["data=sklearn", "seed=2"]
    assert v2.locator(".description").inner_text() == "digits, try 2"
    # a failed version says why and cannot be deployed; its model, as training wrote it, is downloaded
    v3 = page.locator("section.version[data-version='3']")
    assert "ONNX export refused" in v3.locator(".node-error").inner_text()
    assert v3.locator("button.deploy").is_disabled()
    assert "cannot be served" in v3.locator("button.deploy").get_attribute("title")
    assert "without the serving files" in v3.locator("a.download").get_attribute("title")
    with page.expect_download() as got:
        v3.locator("a.download").click()
    assert got.value.suggested_filename == "digits-3.tar.gz"
    with tarfile.open(got.value.path()) as tar:
        assert tar.getnames() == ["digits-3/model.yaml"]
    both_widths(page, request, "model")

    # the archive of a version
    with page.expect_download() as got:
        v2.locator("a.download").click()
    assert got.value.suggested_filename == "digits-2.tar.gz"

    # Deploy: a new endpoint, and its page
    page.set_viewport_size({"width": 1440, "height": 900})
    v2.locator("button.deploy").click()
    form = v2.locator("form.deploy-form")
    form.locator("input.endpoint-name").fill("Bad Name")
    form.locator("button[type=submit]").click()  # the browser holds it back: not a usable name
    assert form.locator("input.endpoint-name").evaluate("e => !e.validity.valid") and not Endpoint.objects.exists()
    page.shot("deploy-form")
    form.locator("input.endpoint-name").fill("")  # empty: named after the model
    form.locator("button[type=submit]").click()
    page.wait_for_url(f"{page.base}/endpoints/digits/")
    page.wait_for_selector("html[data-endpoint-loaded]")
    endpoint = Endpoint.objects.get(name="digits")
    assert endpoint.version.version == 2 and endpoint.owner == owner
    assert page.inner_text("#endpoint-status") == "unavailable"
    assert "No serving process" in page.inner_text("#status-message")
    assert page.inner_text("#serving-version") == "2"
    assert page.inner_text("#scoring-url").endswith("/api/endpoints/digits/score")
    primary = page.locator(".key-row[data-key=primary] code.key")
    assert primary.inner_text() == "••••••••" + endpoint.primary_key[-4:]
    curl = page.inner_text("#curl")
    assert curl.startswith("curl -X POST") and endpoint.primary_key not in curl and endpoint.primary_key[-4:] in curl
    page.click("#show-curl-key")
    assert endpoint.primary_key in page.inner_text("#curl")
    # Copy puts the whole command, key included, on the clipboard
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=page.base)
    page.click("#copy-curl")
    page.wait_for_selector("#action-result >> text=copied")
    assert page.evaluate("navigator.clipboard.readText()") == endpoints.curl(endpoint)
    assert page.inner_text("#stat-requests") == "0" and page.inner_text("#stat-p50") == "—"
    assert page.is_visible("#no-errors")
    full_shot(page, request, "endpoint-new")

    # a serving process loads it: the page follows without a reload
    healthy(endpoint)
    page.wait_for_selector("html[data-endpoint-status=healthy]", timeout=15_000)
    page.wait_for_function("document.querySelector('#stat-requests').textContent === '100'")
    assert page.inner_text("#status-message") == "Serving version 2 on 1 serving process"
    p50, p95 = page.inner_text("#stat-p50"), page.inner_text("#stat-p95")
    assert p50.endswith(" ms") and 3.8 <= float(p50.split()[0]) <= 4.2, p50
    assert p95.endswith(" ms") and 11 <= float(p95.split()[0]) <= 13, p95
    assert page.inner_text("#stat-errors") == "2"
    assert page.locator("#recent-errors tbody tr").count() == 2
    assert "not an image" in page.inner_text("#recent-errors")
    both_widths(page, request, "endpoint-healthy")
    page.set_viewport_size({"width": 1440, "height": 900})

    # the primary key: shown, then regenerated (the old one stops working)
    page.locator(".key-row[data-key=primary] button.show-key").click()
    assert primary.inner_text() == endpoint.primary_key
    assert page.evaluate("document.activeElement.getAttribute('aria-label')") == "Hide the primary key"  # focus kept
    old = endpoint.primary_key
    page.once("dialog", lambda d: d.accept())
    page.locator(".key-row[data-key=primary] button.regenerate").click()
    page.wait_for_function(f"document.querySelector('.key-row[data-key=primary] code.key').textContent !== {old!r}")
    endpoint.refresh_from_db()
    assert endpoint.primary_key != old and primary.inner_text() == endpoint.primary_key
    assert "old one no longer works" in page.inner_text("#action-result")

    # switch to version 1 (the failed version 3 is not offered)
    assert page.locator("#version-select option").all_inner_texts() == ["version 1", "version 2"]
    assert page.locator("#switch-version").is_disabled()
    page.select_option("#version-select", "1")
    page.click("#switch-version")
    page.wait_for_function("document.querySelector('#serving-version').textContent === '1'")
    endpoint.refresh_from_db()
    assert endpoint.version.version == 1
    assert page.inner_text("#serves-word") == "Switching to"  # not "Serves": version 2 answers until it is loaded
    assert "meanwhile version 2 answers" in page.inner_text("#status-message")
    full_shot(page, request, "endpoint-switching")
    healthy(endpoint)  # the serving process has loaded version 1: the switch's note goes
    page.wait_for_function("document.querySelector('#status-message').textContent === 'serving version 1 on 1 serving process'")
    assert page.inner_text("#action-result") == "" and page.inner_text("#serves-word") == "Serves"
    full_shot(page, request, "endpoint-switched")

    # the endpoints list
    page.goto(f"{page.base}/endpoints/")
    row = page.locator("#endpoints tr[data-endpoint=digits]")
    assert row.locator("td").nth(2).inner_text() == "1"
    both_widths(page, request, "endpoints")

    # a version in use is not deleted: the page says which endpoint serves it
    page.goto(f"{page.base}/models/digits/")
    page.wait_for_selector("html[data-model-loaded]")
    assert "Served by digits" in page.locator("section.version[data-version='1'] .served").inner_text()
    page.once("dialog", lambda d: d.accept())
    page.locator("section.version[data-version='1'] button.delete-version").click()
    page.wait_for_selector("#action-result.error")
    assert "served by endpoint 'digits'" in page.inner_text("#action-result")
    assert ModelVersion.objects.filter(model=model, version=1).exists()
    # the failed version goes
    page.once("dialog", lambda d: d.accept())
    page.locator("section.version[data-version='3'] button.delete-version").click()
    page.wait_for_selector("section.version[data-version='3']", state="detached")
    assert page.inner_text("#action-result") == "Version 3 deleted."
    assert sorted(model.versions.values_list("version", flat=True)) == [1, 2]


def test_a_version_being_prepared_becomes_downloadable_without_a_reload_and_its_tags_are_edited(page, users):
    model = seed_model(users["owner"], versions=(("preparing", ""),))
    page.goto(f"{page.base}/models/digits/")
    page.wait_for_selector("html[data-model-loaded]")
    card = page.locator("section.version[data-version='1']")
    assert card.locator(".badge").inner_text() == "preparing"
    assert card.locator("a.download").count() == 0 and card.locator("span.download").get_attribute("aria-disabled") == "true"
    assert "Preparing the archive" in card.inner_text()
    ModelVersion.objects.filter(model=model).update(status="ready")  # as a worker's packaging does
    page.wait_for_selector("section.version[data-version='1'] a.download", timeout=15_000)
    assert card.locator(".badge").inner_text() == "ready" and "Preparing the archive" not in card.inner_text()

    # its description and tags are edited in place
    card.locator("button.edit-about").click()
    card.locator("textarea.edit-description").fill("the one for production")
    card.locator("input.edit-tags").fill("data=sklearn, stage")
    card.locator("button.save-about").click()
    page.shot("editing-tags")
    assert card.locator(".about-form .field-error").inner_text() == 'Tag "stage" is not of the form key=value.'
    card.locator("input.edit-tags").fill("data=sklearn, stage=prod")
    card.locator("button.save-about").click()
    page.wait_for_selector("section.version[data-version='1'] .about")
    assert card.locator(".description").inner_text() == "the one for production"
    assert card.locator("ul.tags li").all_inner_texts() == ["data=sklearn", "stage=prod"]
    version = model.versions.get()
    assert (version.description, version.tags) == ("the one for production", {"data": "sklearn", "stage": "prod"})


def test_a_model_folder_of_its_own_deploys_with_the_entry_script_chosen_in_the_deploy_form(page, users, tmp_path):
    """Issue 29: a component's torch.save model is served by an entry script, which Deploy takes as a file."""
    may_add_components(users["owner"])
    version = seed_model(users["owner"], name="chickens", versions=(("ready", ""),)).versions.get()
    version.format, version.has_onnx = "pytorch", False
    version.lineage = {**version.lineage, "metrics": {"best_val_acc": 0.96, "loss": 0.125}, "classes": []}
    version.save()
    page.goto(f"{page.base}/models/chickens/")
    page.wait_for_selector("html[data-model-loaded]")
    card = page.locator("section.version[data-version='1']")
    assert "pytorch model folder: deploy it with an entry script" in card.inner_text()
    metrics = card.locator("dl.metrics").inner_text()  # the last value of each metric its script logged
    assert "best_val_acc" in metrics and "0.96" in metrics and "0.125" in metrics
    card.locator("button.deploy").click()
    script = tmp_path / "pytorch_score.py"
    script.write_text((ROOT / "examples" / "components" / "pytorch_score" / "pytorch_score.py").read_text())
    form = card.locator("form.deploy-form")
    form.locator("input.entry-script").set_input_files(str(script))
    form.locator("button[type=submit]").click()
    page.wait_for_url(f"{page.base}/endpoints/chickens/")
    page.wait_for_selector("html[data-endpoint-loaded]")
    endpoint = Endpoint.objects.get(name="chickens")
    assert endpoint.entry_script_name == "pytorch_score.py" and endpoint.entry_script == script.read_text()
    assert page.inner_text("#entry-script-name") == "pytorch_score.py" and '{"data"' in page.inner_text("#curl")


def test_a_components_model_output_is_registered_from_outputs_and_sent_to_its_page_to_deploy(page, users):
    """Issue 29: Register model on a component's output declared as a model (custom_model)."""
    from sdk.formats.meta import write_meta
    from tests.pipes import node as pipe_node
    from tests.pipes import pipeline as pipe

    owner = users["owner"]
    doc = pipe([pipe_node("fit", "pytorch_score_train", num_epochs=3)], [], name="chickens")
    doc["layout"] = {"fit": {"x": 200, "y": 120}}
    pipeline = Pipeline.objects.create(owner=owner, name="chickens", draft=doc)
    run = Run.objects.create(owner=owner, pipeline=pipeline, name="chickens", snapshot=doc, status="completed")
    folder = Path(settings.ARTIFACT_ROOT) / str(run.id) / "fit" / "model"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "model.pt").write_bytes(b"weights")
    write_meta(folder, "ModelDirectory")
    NodeRun.objects.create(run=run, node_id="fit", kind="pytorch_score_train", status="completed", outputs={"model": str(folder)})
    page.goto(f"{page.base}/pipelines/{pipeline.id}/?run={run.id}")
    page.wait_for_selector("html[data-designer-ready=true]")
    page.click("[role=tab][data-tab=outputs]")
    node(page, "fit").click()
    page.wait_for_selector("#tab-outputs h3 >> text=in run")
    page.click("#register-model")
    page.fill("#register-name", "chickens")
    page.click("#register-submit")
    page.wait_for_selector("#register-done")
    version = ModelVersion.objects.get(model__name="chickens", version=1)
    assert (version.format, version.status, version.node_id) == ("pytorch", "ready", "fit")
    dialog = page.locator("#register-dialog")
    assert "deploy it from its page (Open model, Deploy) with an entry script" in dialog.inner_text()
    assert not dialog.locator("#register-deploy").is_visible()  # the server would refuse it without a script


def test_another_users_models_and_endpoints_are_404(users, stranger_client, owner_client):
    model = seed_model(users["owner"])
    Endpoint.objects.create(owner=users["owner"], name="digits", version=model.versions.get(version=1), primary_key="a" * 43,
                            secondary_key="b" * 43)
    assert owner_client.get("/models/digits/").status_code == 200
    assert owner_client.get("/endpoints/digits/").status_code == 200
    assert stranger_client.get("/models/digits/").status_code == 404
    assert stranger_client.get("/endpoints/digits/").status_code == 404
    assert b"digits" not in stranger_client.get("/models/").content
    assert b"digits" not in stranger_client.get("/endpoints/").content


@pytest.mark.usefixtures("one_thread")
@pytest.mark.timeout(600)  # a training, the version's packaging on a worker, a serving process: on a shared machine
def test_register_model_from_outputs_then_deploy_in_three_clicks(page, users, request, tmp_path, shared_worker):
    """From a finished run to an endpoint that answers the page's own curl command: three clicks."""
    owner = users["owner"]
    serving = Serving(TEST_DATA)  # `make run` starts one beside the web app: it takes up what is deployed
    request.addfinalizer(serving.stop)
    run = run_inline(owner, digits_doc(add_digits(owner, tmp_path), export=False), name="Digits example (copy)")
    page.goto(f"{page.base}/pipelines/{run.pipeline_id}/?run={run.id}")
    page.wait_for_selector("html[data-designer-ready=true]")
    page.wait_for_selector("#run-banner >> text=completed")
    page.click("[role=tab][data-tab=outputs]")
    # a module that outputs no model has no Register button
    node(page, "score").click()
    page.wait_for_selector("#tab-outputs h3 >> text=Score Image Model in run")
    assert page.locator("#register-model").count() == 0
    node(page, "train").click()
    page.wait_for_selector("#tab-outputs h3 >> text=Train PyTorch Model in run")
    page.set_viewport_size({"width": 1024, "height": 768})
    page.shot("outputs-1024")

    # an earlier run of the pipeline whose training did better (as its stored events say)
    better = Run.objects.create(owner=owner, pipeline=run.pipeline, name=run.name, snapshot=run.snapshot, status="completed")
    NodeRun.objects.create(run=better, node_id="train", kind="train_pytorch_model", status="completed")
    Event.objects.create(run=better, node_id="train", type="metric", data={"name": "validation_top1_accuracy", "value": 1.0, "step": 1})
    page.click("#register-model")  # click 1
    dialog = page.locator("#register-dialog")
    # the figure to choose by: this model's, and the better run's, with the way to it
    dialog.locator(".figure-better").wait_for()
    assert dialog.locator(".figure-mine").inner_text().startswith("validation_top1_accuracy of this model: 0.")
    assert dialog.locator(".figure-better").inner_text() == (f"Run #{better.id} of this pipeline has a better one: 1. "
                                                             f"Open run #{better.id} to register its model instead.")
    assert dialog.locator("#register-name").input_value() == "Digits-example-copy"  # the pipeline's name, name-safe
    page.fill("#register-tags", "data=sklearn, oops")
    page.click("#register-submit")
    assert dialog.locator("#register-error").inner_text() == 'Tag "oops" is not of the form key=value.'
    page.fill("#register-tags", "data=sklearn")
    page.fill("#register-name", "bad name!")
    page.click("#register-submit")
    page.wait_for_selector("#register-error >> text=Not registered")
    assert "model name 'bad name!' is not usable" in dialog.locator("#register-error").inner_text()
    assert not ModelVersion.objects.exists()
    page.fill("#register-name", "digits")
    page.fill("#register-description", "two epochs")
    page.shot("dialog-1024")
    page.click("#register-submit")  # click 2
    page.wait_for_selector("#register-done")
    assert dialog.locator(".registered").inner_text() == "Registered digits version 1"
    assert dialog.locator("#open-model").get_attribute("href") == "/models/digits/"
    version = ModelVersion.objects.get(model__name="digits", version=1)
    # My models in the palette lists it at once
    page.wait_for_selector("#model-list .palette-item[data-model=digits]", state="attached")
    assert (version.run_id, version.node_id, version.tags, version.description) == (run.id, "train", {"data": "sklearn"}, "two epochs")
    page.set_viewport_size({"width": 1440, "height": 900})
    page.shot("registered-1440")

    page.click("#register-deploy")  # click 3
    page.wait_for_url(f"{page.base}/endpoints/digits/")
    page.wait_for_selector("html[data-endpoint-loaded]")
    assert Endpoint.objects.get(name="digits").version == version
    assert "curl -X POST" in page.inner_text("#curl")
    # a worker packages the version (ONNX), the serving process loads it: the page follows by itself
    page.wait_for_selector("html[data-endpoint-status=healthy]", timeout=patience(300_000))
    assert page.inner_text("#status-message").startswith("Serving version 1 on 1 serving process")
    page.click("#show-curl-key")
    command = page.inner_text("#curl")
    assert command.startswith("curl -X POST") and "image=@image.png" in command
    # the page's curl, as a user pastes it into a shell beside an image (the test's serving port)
    (tmp_path / "image.png").write_bytes(png(size=(32, 32)))
    command = command.replace(settings.SERVING_URL, serving.url)
    done = subprocess.run(["bash", "-c", command + " --silent --show-error --fail-with-body"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, (done.stdout, done.stderr)
    answer = json.loads(done.stdout)
    assert answer["classes"] == CLASSES and len(answer["predictions"]) == 1, answer
    (prediction,) = answer["predictions"]
    assert prediction["label"] in CLASSES and sum(prediction["probabilities"].values()) == pytest.approx(1, abs=1e-4)
    page.locator("#stat-requests", has_text="1").wait_for(timeout=30_000)  # the page's figures follow
    page.shot("endpoint-answers-1440")

    # deleting the endpoint frees its version
    page.once("dialog", lambda d: d.accept())
    page.click("#delete-endpoint")
    page.wait_for_url(f"{page.base}/endpoints/")
    assert page.is_visible("#no-endpoints") and not Endpoint.objects.exists()


def label_shown(page, nid, text):
    """Wait until node `nid` shows `text` as its label (X6 writes its spaces as no-break spaces)."""
    shown = f"document.querySelector('#canvas g[data-cell-id=\"{nid}\"] text').textContent.replace(/\\u00a0/g, ' ')"
    page.wait_for_function(f"{shown} === {text!r}")


def node_texts(page, nid, lines):
    """Once node `nid`'s label is drawn on `lines` lines: those lines, and the boxes on the page of
    the label, the status, the port names and the node."""
    cell = f"document.querySelector('#canvas g[data-cell-id=\"{nid}\"]')"
    page.wait_for_function(f"{cell}.querySelectorAll('text.node-label tspan').length === {lines}")
    return page.evaluate(f"""(() => {{
      const g = {cell}; const box = (e) => {{ const r = e.getBoundingClientRect(); return {{x: r.x, y: r.y, width: r.width, height: r.height}}; }};
      return {{lines: [...g.querySelectorAll('text.node-label tspan')].map((t) => t.textContent.replace(/\\u00a0/g, ' ')),
               label: box(g.querySelector('text.node-label')), status: box(g.querySelector('text.node-status')),
               ports: [...g.querySelectorAll('.x6-port-label text')].filter((t) => t.textContent).map(box),
               node: {{...box(g.querySelector('rect')), height: designer.graph.getCellById('{nid}').getSize().height}}}};
    }})()""")


def test_my_models_in_the_palette_add_a_registered_model_node_named_after_it(page, users, request):
    seed_model(users["owner"], versions=(("ready", ""), ("ready", "")))
    open_designer(page, users["owner"])
    page.wait_for_selector("#my-models[data-loaded]")
    item = page.locator("#model-list .palette-item[data-model=digits]")
    assert item.inner_text() == "digits v2"
    label = page.evaluate("JSON.parse(document.getElementById('designer-boot').textContent).modules.find(m => m.kind === 'registered_model').label")

    box = page.locator("#canvas").bounding_box()
    drag(page, item, (box["x"] + 300, box["y"] + 120))
    page.wait_for_function("designer.graph.getNodes().length === 1")
    nid = page.evaluate("designer.graph.getNodes()[0].id")
    assert page.evaluate(f"designer.graph.getCellById('{nid}').getData()")["parameters"]["model"] == "digits"
    label_shown(page, nid, f"{label}: digits")
    # Enter adds one too (keyboard users)
    item.focus()
    page.keyboard.press("Enter")
    page.wait_for_function("designer.graph.getNodes().length === 2")
    stored = saved(page).draft["nodes"]
    assert [(n["kind"], n["parameters"].get("model")) for n in stored] == [("registered_model", "digits")] * 2
    # the node's label follows its model's name when it is edited in the pane
    node(page, nid).click()
    field = page.locator("#tab-module [data-param=model]")
    field.fill("mnist")
    label_shown(page, nid, f"{label}: mnist")
    # a longer name takes a second line, whole, and the status moves down under it (issue 30: the
    # label was cut to "Registered model: Photos-..."); nothing of the node is drawn over another
    height = page.evaluate(f"designer.graph.getCellById('{nid}').getSize().height")
    field.fill("Photos-classifier-2026")
    drawn = node_texts(page, nid, lines=2)
    assert drawn["lines"] == [f"{label}:", "Photos-classifier-2026"], drawn
    assert drawn["node"]["height"] == height + 16, drawn
    boxes = [b for b in (drawn["label"], drawn["status"], *drawn["ports"]) if b["width"] and b["height"]]  # drawn ones
    assert not [(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:] if overlap(a, b)], drawn
    assert all(inside(b, drawn["node"]) for b in boxes), drawn
    page.shot("my-models-long-name-1400")
    field.fill("mnist")  # one line again: the node as it was
    node_texts(page, nid, lines=1)
    page.wait_for_function(f"designer.graph.getCellById('{nid}').getSize().height === {height}")
    page.shot("my-models-1400")
    page.set_viewport_size({"width": 1024, "height": 768})
    page.shot("my-models-1024")
