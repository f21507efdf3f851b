"""The digits example built by hand in a real Chromium, as a user would: upload a zip of digit
images from the palette, drag every module onto an empty canvas, wire every port by dragging from
an output port to an input port, set the parameters in the right pane, submit with the keyboard,
watch every node turn completed, read the training node's driver log, open the evaluation's
confusion matrix and export the pipeline file. Each step leaves a screenshot under
test-results/<test name>/. The values are those of examples/digits.json on a third of the
images (60 per class), with six epochs and a shorter warm-up: about 30 s of training on two
shared cores, 96.7% on the held-out images."""
import os
import time

import pytest

from designer.engine import graph
from designer.pipelines.catalogue.service import get_catalogue
from designer.pipelines.models import Dataset, Run
from tests.e2e.helpers import chart_of, connect, drop_module, links, node, open_designer, saved, select, set_parameters
from tests.imagesets import digits_folder, make_archive
from tests.machine import patience

pytestmark = pytest.mark.browser

PER_CLASS = 60  # 600 images: 540 to train on, 60 to validate, score and evaluate
RUN_TIMEOUT_MS = patience(150_000)  # each node's, in turn (tests/machine.py: longer on a slower machine)

# (label in the palette, name used below, x and y of its drop on the canvas)
MODULES = [
    ("Convert to Image Directory", "convert", 130, 130),
    ("Split Image Directory", "split", 130, 220),
    ("Init Image Transformation", "transform", 390, 220),
    ("Apply Image Transformation", "apply_train", 130, 320),
    ("Apply Image Transformation", "apply_val", 390, 320),
    ("ResNet", "resnet", 650, 320),
    ("Train PyTorch Model", "train", 390, 420),
    ("Score Image Model", "score", 390, 510),
    ("Evaluate Model", "evaluate", 390, 600),
]
# (from node, output port, to node, input port), as in examples/digits.json
WIRES = [
    ("dataset", "dataset", "convert", "input_dataset"),
    ("convert", "image_directory", "split", "image_directory"),
    ("split", "results_dataset1", "apply_train", "image_directory"),
    ("split", "results_dataset2", "apply_val", "image_directory"),
    ("transform", "image_transformation", "apply_train", "image_transformation"),
    ("transform", "image_transformation", "apply_val", "image_transformation"),
    ("resnet", "untrained_model", "train", "untrained_model"),
    ("apply_train", "transformed_image_directory", "train", "training_dataset"),
    ("apply_val", "transformed_image_directory", "train", "validation_dataset"),
    ("train", "trained_model", "score", "trained_model"),
    ("apply_val", "transformed_image_directory", "score", "dataset"),
    ("score", "scored_dataset", "evaluate", "scored_dataset"),
]
# what the right pane is set to (parameter name: value); the rest keep their defaults
PARAMETERS = {
    "split": {"fraction": 0.9, "random_seed": 0},
    "transform": {"resize": True, "size": 32, "center_crop": False, "random_horizontal_flip": False},
    "apply_train": {"mode": "For training"},
    "apply_val": {"mode": "For inference"},
    "resnet": {"model_name": "resnet18", "pretrained": False},
    "train": {"epochs": 6, "batch_size": 32, "warmup_step_number": 10, "learning_rate": 0.05, "random_seed": 1,
              "patience": 3, "print_frequency": 5},
}


class Steps:
    """Numbered screenshots: 01-upload.png, 02-palette-drop.png, ..."""

    def __init__(self, page):
        self.page, self.n = page, 0

    def __call__(self, name):
        self.n += 1
        self.page.shot(f"{self.n:02d}-{name}")




def upload_digits(page, tmp_path):
    folder = digits_folder(tmp_path / "digits", per_class=PER_CLASS, size=32)
    archive = make_archive(folder, tmp_path / "digits.zip", "zip")
    page.set_input_files("#upload-file", str(archive))
    page.click("#upload")
    page.wait_for_selector("#upload-status >> text=Uploaded digits")
    assert page.locator("#upload-progress").get_attribute("value") == "100"
    return Dataset.objects.get(name="digits")


def has_visible_focus(locator) -> bool:
    """Focused, and drawn so: a real outline (not `none`, not zero wide)."""
    return locator.evaluate("""e => {
        const s = getComputedStyle(e);
        return document.activeElement === e && e.matches(':focus-visible')
            && s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) >= 2;
    }""")


def tab_to(page, target, limit=40):
    """Press Tab until `target` has the focus; each stop must show where the focus is."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        if target.evaluate("e => document.activeElement === e"):
            return
    raise AssertionError(f"{target} is not reached with Tab")


def test_the_digits_example_is_built_by_drag_and_drop_run_and_exported(page, users, shared_worker, tmp_path):
    started = time.monotonic()
    shot = Steps(page)
    p = open_designer(page, users["owner"], name="digits by hand")
    assert page.evaluate("designer.graph.getNodes().length") == 0
    assert "Drag modules from the palette" in page.inner_text("#problems")
    shot("empty-canvas")

    # 1. the dataset: uploaded from the palette, then dragged onto the canvas
    dataset = upload_digits(page, tmp_path)
    shot("uploaded")
    ids = {"dataset": drop_module(page, "digits", 130, 40)}
    for label, name, x, y in MODULES:
        ids[name] = drop_module(page, label, x, y)
        node(page, ids[name]).wait_for()
    assert page.evaluate("designer.graph.getNodes().length") == 10
    shot("modules-dropped")

    # 2. every port wired by dragging from an output port to an input port
    for src, out, dst, inp in WIRES:
        connect(page, ids[src], out, ids[dst], inp)
        made = links(page.evaluate("designer.toDraft()"))
        assert (ids[src], out, ids[dst], inp) in made, (src, out, dst, inp, made)
    assert page.locator("#banner").is_hidden(), page.inner_text("#banner")
    assert page.evaluate("designer.graph.getEdges().length") == len(WIRES)
    shot("wired")

    # 3. parameters in the right pane
    for name, values in PARAMETERS.items():
        set_parameters(page, ids[name], values)
        if name in ("resnet", "train"):
            shot(f"parameters-{name}")
    draft = saved(page).draft
    assert links(draft) == sorted((ids[a], pa, ids[b], pb) for a, pa, b, pb in WIRES)
    by_id = {n["id"]: n for n in draft["nodes"]}
    assert by_id[ids["dataset"]]["parameters"]["dataset"] == dataset.id
    for name, values in PARAMETERS.items():
        assert by_id[ids[name]]["parameters"] | values == by_id[ids[name]]["parameters"], name
    page.wait_for_selector("#problems.ok >> text=No problems: ready to submit.")
    shot("ready")

    # 4. submit with the keyboard: Tab from the toolbar to Submit, which shows its focus; Enter
    page.locator("#fit").focus()
    submit = page.locator("#submit")
    tab_to(page, submit)
    assert has_visible_focus(submit)
    shot("submit-focused")
    page.keyboard.press("Enter")
    page.wait_for_selector("#run-banner:not([hidden])")
    page.wait_for_selector("#submit:not([aria-disabled])")
    assert has_visible_focus(submit)  # the keyboard user is still where they were
    run = Run.objects.get(pipeline=p)
    for nid in ids.values():
        page.wait_for_selector(f'#canvas g[data-cell-id="{nid}"] [data-status="completed"]', timeout=RUN_TIMEOUT_MS)
    page.wait_for_selector("#run-banner[data-status=completed]")
    assert f"Run #{run.id}: completed · 10/10 modules done" in page.inner_text("#run-banner")
    for nid in ids.values():
        assert node(page, nid).locator("[data-status]").get_attribute("data-status") == "completed"
    shot("run-completed")

    # 5. the training node's outputs and its driver log
    select(page, ids["train"])
    page.click("[data-tab=outputs]")
    outputs = page.locator("#tab-outputs")
    page.wait_for_selector("#tab-outputs ul.files[data-port=trained_model] a")
    assert f"Train PyTorch Model in run #{run.id}: completed" in outputs.locator("h3").inner_text()
    assert page.locator("#log-file option").all_inner_texts()[0].startswith("70_driver_log")
    page.locator("#log-file").select_option("70_driver_log.txt")
    page.wait_for_selector("#log-text:has-text('finished in')")
    log = page.inner_text("#log-text")
    assert "resnet18" in log and "540 training and 60 validation images, 10 classes" in log, log[:2000]
    assert "Epoch 6:" in log and "kept the weights of epoch" in log, log[-2000:]
    # the device it trained on (a CPU worker here: no GPU), in the log and above the outputs
    assert "rank 0: CPU: " in log and "mixed precision off" in log, log[:2000]
    # torch's threads: the share of one of the worker's 2 slots of its cores (more threads than cores is far slower)
    assert f"1 process(es), {max(1, (os.cpu_count() or 1) // 2)} thread(s) each" in log, log[:2000]
    assert outputs.locator("#ran-on li").inner_text().startswith(f"CPU on {shared_worker.hostname}")
    shot("driver-log")

    # its Metrics: training and validation loss on one chart, their top-1 accuracies on another,
    # by epoch on a whole-number axis
    page.click("[data-tab=metrics]")
    loss, top1 = (chart_of(page, name) for name in ("validation_loss", "validation_top1_accuracy"))
    assert loss["title"] == "Loss" and [d["label"] for d in loss["lines"]] == ["training_loss", "validation_loss"]
    assert top1["title"] == "Top-1 accuracy"
    assert [d["label"] for d in top1["lines"]] == ["training_top1_accuracy", "validation_top1_accuracy"]
    for chart in (loss, top1):
        assert chart["x"] == "epoch" and all(float(t).is_integer() for t in chart["ticks"]), chart
        assert [len(d["points"]) for d in chart["lines"]] == [6, 6]
    shot("metrics")

    # 6. Evaluate Model's Visualize: metrics and a 10 x 10 confusion matrix over the 60 held-out images
    select(page, ids["evaluate"])
    page.click("[data-tab=visualize]")
    page.wait_for_selector(f"#tab-visualize .visualize[data-node={ids['evaluate']}] table.confusion")
    matrix = page.evaluate("[...document.querySelectorAll('table.confusion tbody tr')]"
                           ".map(r => [...r.cells].slice(1).map(c => Number(c.textContent)))")
    assert len(matrix) == 10 and all(len(row) == 10 for row in matrix)
    assert sum(map(sum, matrix)) == PER_CLASS  # 10 % of 10 x PER_CLASS
    accuracy = float(page.locator("table.metrics tr:has(th:text-is('accuracy')) td").inner_text())
    assert accuracy == pytest.approx(sum(matrix[i][i] for i in range(10)) / PER_CLASS, abs=1e-4)
    assert accuracy >= 0.9, matrix  # 0.967 with these values
    shot("confusion-matrix")

    # 7. a note on Evaluate Model, then at once Export JSON with the keyboard: the file is valid,
    # holds what was built, and the note too (the export saves the last edits first)
    page.click("[data-tab=module]")
    page.fill("#node-comment", "10 x 10 confusion matrix")
    page.locator("#fit").focus()
    export = page.locator("#export")
    tab_to(page, export)
    assert has_visible_focus(export)
    with page.expect_download() as dl:
        page.keyboard.press("Enter")
    exported = tmp_path / dl.value.suggested_filename
    dl.value.save_as(exported)
    doc = graph.parse_text(exported.read_bytes())
    assert graph.validate(doc, get_catalogue()) == []
    assert doc["name"] == "digits by hand"
    assert sorted(n["kind"] for n in doc["nodes"]) == sorted(
        ["dataset", "convert_to_image_directory", "split_image_directory", "init_image_transformation",
         "apply_image_transformation", "apply_image_transformation", "resnet", "train_pytorch_model",
         "score_image_model", "evaluate_model"])
    assert links(doc) == links(draft)
    assert {n["id"]: n.get("comment") for n in doc["nodes"]}[ids["evaluate"]] == "10 x 10 confusion matrix"
    shot("exported")
    assert exported.name == "digits_by_hand.json"
    print(f"digits by drag and drop: {time.monotonic() - started:.0f} s, accuracy {accuracy:.3f}")
