"""The tutorial-shaped component (examples/components/pytorch_train) on real images, headless and
through the page: digits -> Convert to Image Directory -> Split Image Directory -> PyTorch Train
(script) -> Score Image Model -> Evaluate Model.

Headless: `manage.py run_pipeline --inline`; its per-epoch metrics reach the run's events, its
ModelDirectory is what Score Image Model reads; submitted again it is reused; once its code
changes it runs again, and so does a version 2 of it (copies of the example in COMPONENT_DIRS
folders of the test's own).
In the browser: dragged from the palette, wired, submitted, completed; its live metrics in the
Metrics pane. Two epochs on 60 images of 32 x 32 pixels: seconds."""
import shutil
import time

import pytest

from designer.engine import statuses
from designer.pipelines.models import Run
from tests.e2e.component_pipes import (
    EXAMPLES,
    PARAMETERS,
    check_model_and_scores,
    digits_dataset,
    logs_of,
    metric_steps,
    run_headless,
    trained_and_scored,
)
from tests.e2e.helpers import chart_of, connect, drop_module, links, node, open_designer, saved, select, set_parameters
from tests.machine import patience

EPOCH_METRICS = ("training_loss", "training_accuracy", "validation_loss", "validation_accuracy", "best_val_acc")


@pytest.fixture
def components(tmp_path, settings):
    """A copy of the example in a components folder of this test's own: the test edits it."""
    folder = tmp_path / "components"
    shutil.copytree(EXAMPLES / "pytorch_train", folder / "pytorch_train")
    settings.COMPONENT_DIRS = (folder,)
    return folder


@pytest.mark.django_db(transaction=True)  # the run's heartbeat thread writes through its own connection
def test_the_tutorial_script_trains_headless_is_reused_unchanged_and_runs_again_once_its_code_changes(
        tmp_path, users, components, settings, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # the script's torch: one thread on the shared cores
    owner = users["owner"]
    doc = trained_and_scored("pytorch_train", digits_dataset(tmp_path, owner))
    started = time.monotonic()
    out = run_headless(doc, tmp_path, owner)
    first = Run.objects.get()
    assert first.status == statuses.COMPLETED, out
    print(f"pytorch_train headless: {time.monotonic() - started:.1f} s")

    # per-epoch figures from log_metric, in the order of the epochs, and nothing else
    assert metric_steps(first) == {name: [1, 2] for name in EPOCH_METRICS}
    log = (logs_of(first) / "70_driver_log.txt").read_text()
    assert "60 training and 20 validation images, 10 classes" in log, log
    assert "Epoch 2/2" in log and "val Loss:" in log and "Best val Acc:" in log, log
    assert "are not in the torch cache" not in log  # Pretrained off: no weights asked for
    info = check_model_and_scores(first)
    assert info["transforms"]["steps"][-1] == {"op": "center_crop", "random": False, "size": 32}

    # unchanged: reused, and so is everything after it
    run_headless(doc, tmp_path, owner)
    second = Run.objects.latest("id")
    assert {n.node_id: n.status for n in second.nodes.all()} == {nid: statuses.REUSED for nid in (
        "dataset", "convert", "split", "train", "score", "evaluate")}

    # its code changes (one comment line): it runs again, the rest before it is still reused
    script = components / "pytorch_train" / "pytorch_train.py"
    script.write_text(script.read_text() + "# a line more\n")
    run_headless(doc, tmp_path, owner)
    third = Run.objects.latest("id")
    by_node = {n.node_id: n.status for n in third.nodes.all()}
    assert by_node["train"] == statuses.COMPLETED and by_node["split"] == statuses.REUSED, by_node
    assert metric_steps(third)["validation_accuracy"] == [1, 2]
    assert (logs_of(third) / "70_driver_log.txt").read_text().count("Epoch 2/2") == 1
    check_model_and_scores(third)

    # version 2 of it (the same code) in another settings folder: it runs again, at version 2
    upgraded = tmp_path / "components-v2" / "pytorch_train"
    shutil.copytree(components / "pytorch_train", upgraded)
    spec = upgraded / "component.yaml"
    spec.write_text(spec.read_text().replace("\nversion: 1\n", "\nversion: 2\n"))
    settings.COMPONENT_DIRS = (upgraded.parent,)
    run_headless(doc, tmp_path, owner)
    fourth = Run.objects.latest("id")
    assert fourth.nodes.get(node_id="train").status == statuses.COMPLETED
    assert {n["id"]: n.get("version") for n in fourth.snapshot["nodes"]}["train"] == 2


# --------------------------------------------------------------------------- in the browser




MODULES = [("Convert to Image Directory", "convert", 130, 130), ("Split Image Directory", "split", 130, 230),
           ("PyTorch Train (script)", "train", 330, 340), ("Score Image Model", "score", 330, 450),
           ("Evaluate Model", "evaluate", 330, 550)]
WIRES = [("dataset", "dataset", "convert", "input_dataset"), ("convert", "image_directory", "split", "image_directory"),
         ("split", "results_dataset1", "train", "training_data"), ("split", "results_dataset2", "train", "validation_data"),
         ("train", "model", "score", "trained_model"), ("split", "results_dataset2", "score", "dataset"),
         ("score", "scored_dataset", "evaluate", "scored_dataset")]


@pytest.mark.browser
def test_the_tutorial_script_is_dragged_wired_and_trains_on_real_images_with_live_metrics(
        page, users, shared_worker, tmp_path):
    started = time.monotonic()
    owner = users["owner"]
    dataset_id = digits_dataset(tmp_path, owner)
    p = open_designer(page, owner, name="tutorial component")
    page.fill("#palette-search", "script")  # found by its label, under its category
    page.locator(".palette-item", has_text="PyTorch Train (script)").wait_for()
    page.locator(".palette-item", has_text="Score Image Model").wait_for(state="hidden")
    page.fill("#palette-search", "")
    ids = {"dataset": drop_module(page, "digits", 130, 40)}
    for label, name, x, y in MODULES:
        ids[name] = drop_module(page, label, x, y)
        node(page, ids[name]).wait_for()
    for src, out, dst, inp in WIRES:
        connect(page, ids[src], out, ids[dst], inp)
        assert (ids[src], out, ids[dst], inp) in links(page.evaluate("designer.toDraft()")), (src, out, dst, inp)
    set_parameters(page, ids["split"], {"fraction": 0.75, "random_seed": 0})
    set_parameters(page, ids["train"], PARAMETERS["pytorch_train"])
    page.shot("01-wired")
    draft = saved(page).draft
    by_id = {n["id"]: n for n in draft["nodes"]}
    assert by_id[ids["dataset"]]["parameters"]["dataset"] == dataset_id
    assert by_id[ids["train"]]["kind"] == "pytorch_train"
    assert by_id[ids["train"]]["parameters"] | PARAMETERS["pytorch_train"] == by_id[ids["train"]]["parameters"]
    page.wait_for_selector("#problems.ok >> text=No problems: ready to submit.")

    page.click("#submit")
    page.wait_for_selector(f'#canvas g[data-cell-id="{ids["train"]}"] [data-status="running"]', timeout=patience(60_000))
    select(page, ids["train"])
    page.click("[data-tab=metrics]")
    # the first epoch's points appear while the script runs (log_metric -> events -> the socket)
    chart_of(page, "validation_accuracy", timeout=patience(60_000))
    page.shot("02-metrics-live")
    for nid in ids.values():
        page.wait_for_selector(f'#canvas g[data-cell-id="{nid}"] [data-status="completed"]', timeout=patience(120_000))
    page.wait_for_selector("#run-banner[data-status=completed]")
    page.wait_for_function("Chart.getChart(document.querySelector('#tab-metrics canvas[data-metrics~=training_loss]'))"
                           ".data.datasets[0].data.length === 2")
    for name in EPOCH_METRICS:
        (line,) = [d for d in chart_of(page, name)["lines"] if d["label"] == name]
        assert [p["x"] for p in line["points"]] == [1, 2], name
    page.shot("03-metrics-done")

    # its driver log in the pane: the tutorial's lines
    page.click("[data-tab=outputs]")
    page.wait_for_selector("#tab-outputs ul.files[data-port=model] a")
    page.locator("#log-file").select_option("70_driver_log.txt")
    page.wait_for_selector("#log-text:has-text('Best val Acc')")
    assert "Epoch 2/2" in page.inner_text("#log-text")
    page.shot("04-driver-log")
    run = Run.objects.get(pipeline=p)
    assert run.status == statuses.COMPLETED
    assert {n.node_id: n.status for n in run.nodes.all()} == {nid: statuses.COMPLETED for nid in ids.values()}
    check_model_and_scores(run, ids)
    print(f"pytorch_train in the browser: {time.monotonic() - started:.0f} s")

