"""Visualize: an ImageDirectory (thumbnails, class counts), a ScoredDataset (table, wrong
predictions only), EvaluationResults (metrics and confusion matrix), in the format the image
modules write (sdk/formats/: image_directory.py, scored_dataset.py, evaluation.py)."""
import base64
import json

import pytest
from django.conf import settings

from designer.pipelines.models import NodeRun, Run
from tests.e2e.helpers import node, open_designer
from tests.pipes import link, pipeline
from tests.pipes import node as n

pytestmark = pytest.mark.browser
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")


def outputs(tmp):
    images = tmp / "images"
    (images / "images").mkdir(parents=True)
    rows = ["path,label"]
    for i, label in enumerate(["0", "0", "1", "7"]):
        (images / "images" / f"{i}.png").write_bytes(PNG)
        rows.append(f"images/{i}.png,{label}")
    (images / "index.csv").write_text("\n".join(rows) + "\n")
    (images / "_meta.yaml").write_text("type: ImageDirectory\nclasses: ['0', '1', '7']\ncount: 4\nlabeled: true\n"
                                       "skipped: [{path: 7/broken.png, reason: 'image file is truncated'}]\nskipped_count: 1\n")
    scored = tmp / "scored"
    scored.mkdir()
    (scored / "_meta.yaml").write_text("type: ScoredDataset\n")
    (scored / "scored.csv").write_text(
        "Image,Label,Scored Probabilities_0,Scored Probabilities_1,Scored Labels\n"
        f"{images}/images/0.png,0,0.9,0.1,0\n{images}/images/2.png,1,0.8,0.2,0\n{images}/images/1.png,0,0.3,0.7,1\n")
    evaluation = tmp / "evaluation"
    evaluation.mkdir()
    (evaluation / "_meta.yaml").write_text("type: EvaluationResults\n")
    (evaluation / "evaluation.json").write_text(json.dumps({"left": {
        "count": 3, "classes": ["0", "1"], "overall": {"accuracy": 1 / 3, "macro_precision": 0.25},
        "per_class": [{"class": "0", "precision": 0.5, "recall": 0.5, "f1": 0.5, "support": 2},
                      {"class": "1", "precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 1}],
        "confusion_matrix": [[1, 1], [1, 0]]}}))
    return images, scored, evaluation


def test_visualize_shows_images_scores_and_evaluation(page, users):
    tmp = settings.ARTIFACT_ROOT / "visualize-test"
    images, scored, evaluation = outputs(tmp)
    doc = pipeline([n("imgs", "toy_source"), n("score", "toy_add"), n("eval", "toy_add")],
                   [link("imgs", "score"), link("score", "eval")])
    p = open_designer(page, users["owner"], doc)
    run = Run.objects.create(owner=users["owner"], pipeline=p, name="p", snapshot=doc, status="completed")
    for nid, port, d in (("imgs", "out", images), ("score", "scored_dataset", scored), ("eval", "evaluation_results", evaluation)):
        NodeRun.objects.create(run=run, node_id=nid, kind="x", status="completed", outputs={port: str(d)})
    page.goto(f"{page.base}/pipelines/{p.id}/?run={run.id}")
    page.wait_for_selector('#canvas g[data-cell-id="imgs"] [data-status="completed"]')

    def open_visualize(nid):
        box = node(page, nid).bounding_box()
        page.mouse.click(box["x"] + 60, box["y"] + 15)
        page.click("[data-tab=visualize]")
        page.wait_for_selector(f"#tab-visualize .visualize[data-node={nid}]")

    open_visualize("imgs")
    pane = page.locator("#tab-visualize")
    assert "4 image(s)" in pane.inner_text()
    assert page.locator(".class-counts tbody tr").all_inner_texts() == ["0\t2", "1\t1", "7\t1"]
    page.wait_for_function("[...document.querySelectorAll('.thumbs img')].every(i => i.complete && i.naturalWidth === 1)")
    assert page.locator(".thumbs img").count() == 4
    # what Convert skipped is said where its images are looked at
    assert " ".join(page.locator(".skipped").inner_text().split()) == (
        "1 unreadable image(s) skipped (corrupt, truncated or too large), listed in the log: 7/broken.png: image file is truncated")
    page.shot("images")

    open_visualize("score")
    assert "3 row(s), 2 wrong prediction(s)" in pane.inner_text()
    assert page.locator("table.scored tbody tr").count() == 3
    page.check("#wrong-only")
    page.wait_for_function("document.querySelectorAll('table.scored tbody tr').length === 2")
    assert page.locator("table.scored tbody tr.wrong").count() == 2
    page.shot("scored")

    open_visualize("eval")
    cells = page.evaluate("[...document.querySelectorAll('table.confusion tbody tr')].map(r => [...r.cells].map(c => c.textContent))")
    assert cells == [["0", "1", "1"], ["1", "1", "0"]]
    assert "0.3333" in page.locator("table.metrics").inner_text()
    # the matrix stays inside the pane (a wide one scrolls sideways within it)
    held, tab = page.locator(".confusion-scroll").bounding_box(), page.locator("#tab-visualize").bounding_box()
    assert held["x"] >= tab["x"] and held["x"] + held["width"] <= tab["x"] + tab["width"] + 0.5
    page.shot("evaluation")


def test_the_thumbnails_span_every_class_not_the_first_ones_of_an_archive_sorted_by_class():
    from designer.pipelines.runs.visualize import sample_across_classes

    labels = ["cat"] * 200 + ["dog"] * 200 + ["owl"] * 10 + ["yak"] * 200
    picked = sample_across_classes(labels, 120)
    assert len(picked) == 120 and picked == sorted(picked)  # listed class by class, each class's first images
    assert {c: sum(labels[i] == c for i in picked) for c in ("cat", "dog", "owl", "yak")} == {"cat": 37, "dog": 37, "owl": 10, "yak": 36}
    assert sample_across_classes(["a", "b"], 120) == [0, 1]


def test_an_image_outside_the_stores_is_not_served(owner_client, users, tmp_path):
    images = tmp_path / "elsewhere"
    images.mkdir()
    (images / "x.png").write_bytes(PNG)
    (images / "index.csv").write_text(f"path,label\n{images}/x.png,a\n")
    (images / "_meta.yaml").write_text("type: ImageDirectory\n")
    run = Run.objects.create(owner=users["owner"], name="p", snapshot={}, status="completed")
    NodeRun.objects.create(run=run, node_id="a", kind="x", status="completed", outputs={"out": str(images)})
    assert owner_client.get(f"/runs/{run.id}/nodes/a/images/out/0").status_code == 404
