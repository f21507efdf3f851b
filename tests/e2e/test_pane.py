"""The right pane: parameters from the module declaration, inline server messages, comment,
run settings for distributed modules only, Regenerate output; autosave and stale tabs."""
import pytest
from playwright.sync_api import expect

from designer.pipelines.models import Pipeline
from tests.e2e.helpers import node, open_designer, saved
from tests.pipes import link, pipeline
from tests.pipes import node as n

pytestmark = pytest.mark.browser


def select(page, nid):
    box = node(page, nid).bounding_box()
    page.mouse.click(box["x"] + 60, box["y"] + 15)
    page.wait_for_selector(f"#node-form[data-node={nid}]")


def test_the_pane_edits_parameters_and_marks_bad_values_with_the_servers_message(page, users):
    doc = pipeline([n("src", "toy_source", value=3), n("add", "toy_add"), n("dist", "toy_pane_distributed"),
                    n("train", "train_pytorch_model")], [link("src", "add"), link("add", "dist")])
    p = open_designer(page, users["owner"], doc)
    select(page, "src")
    assert page.input_value("#param-value") == "3"
    # autosave: an edit is saved by itself, without asking; a reload shows it kept
    page.fill("#param-value", "4")
    page.wait_for_selector(f"#save-state >> text=Saved · revision {p.revision + 1}")
    assert Pipeline.objects.get(pk=p.pk).draft["nodes"][0]["parameters"]["value"] == 4
    page.reload()
    page.wait_for_selector("html[data-designer-ready=true]")
    select(page, "src")
    assert page.input_value("#param-value") == "4"
    assert "the number written" in page.inner_text('[data-field=value] .help')
    assert "<= 1000" in page.inner_text('[data-field=value] .help')
    assert page.locator("#rs-node_count").count() == 0  # not distributed: no Run settings
    page.fill("#param-value", "5000")
    page.locator("#param-value").blur()
    err = page.locator("#error-value")
    err.wait_for(state="visible")
    assert "5000 is out of range: must be >= 0 and <= 1000" in err.inner_text()
    assert page.locator('[data-field=value].invalid').count() == 1
    assert page.locator('#canvas g[data-cell-id="src"] [data-problems]').count() == 1
    page.shot("invalid-value")
    stored = saved(page)
    assert stored.draft["nodes"][0]["parameters"]["value"] == 5000  # kept as typed: nothing is lost
    page.fill("#param-value", "7")
    page.fill("#node-comment", "seven, not five")
    page.check("#regenerate-output")
    draft = saved(page).draft
    page.wait_for_selector("#error-value:empty", state="attached")
    src = draft["nodes"][0]
    assert src["parameters"]["value"] == 7 and src["comment"] == "seven, not five" and src["regenerate_output"] is True
    assert page.locator('#canvas g[data-cell-id="src"] [data-problems]').count() == 0
    # undo brings the old value back into the pane
    page.locator("#canvas").focus()
    page.keyboard.press("Control+z")
    page.wait_for_function("!document.querySelector('#regenerate-output').checked")
    page.keyboard.press("Control+Shift+z")
    page.wait_for_function("document.querySelector('#regenerate-output').checked")

    select(page, "dist")
    assert page.locator("#param-mode option").all_inner_texts() == ["fast", "slow"]
    page.select_option("#param-mode", "slow")
    page.fill("#rs-node_count", "2")
    page.fill("#rs-process_count_per_node", "100")
    page.locator("#rs-process_count_per_node").blur()
    page.wait_for_selector("#error-process_count_per_node:not(:empty)")
    assert "must be between 1 and 64" in page.inner_text("#error-process_count_per_node")
    dist = saved(page).draft["nodes"][2]
    assert dist["parameters"]["mode"] == "slow" and dist["run_settings"] == {"node_count": 2, "process_count_per_node": 100}
    assert page.locator("#scale-note").is_hidden()  # a module without a Batch size: its script decides

    # a training: what 1 x 2 changes (Batch size is per process), said where it is chosen
    select(page, "train")
    assert page.locator("#scale-note").is_hidden()  # 1 x 1
    page.fill("#rs-process_count_per_node", "2")
    expect(page.locator("#scale-note")).to_have_text(
        "2 processes, each with Batch size 16: a global batch of 32 images per step, and 2 times fewer steps per epoch than "
        "1 process takes. To train as 1 process does, scale the learning rate with the global batch (Learning rate 0.001 → "
        "0.002, with a few warm-up steps), or set Batch size to 8 to keep the global batch of 16.")
    page.fill("#param-batch_size", "8")
    expect(page.locator("#scale-note")).to_contain_text("Batch size 8: a global batch of 16 images per step")
    page.locator("#scale-note").scroll_into_view_if_needed()
    page.shot("scaling-note")


def test_a_stale_tab_is_refused_and_offered_a_reload(page, users):
    doc = pipeline([n("src", "toy_source", value=3)], [])
    p = open_designer(page, users["owner"], doc)
    Pipeline.objects.filter(pk=p.pk).update(revision=p.revision + 1, name="changed elsewhere")  # another tab saved
    select(page, "src")
    page.fill("#param-value", "9")
    page.locator("#param-value").blur()
    banner = page.locator("#banner")
    banner.get_by_text("Reload the latest version").wait_for()
    assert banner.inner_text().startswith("This pipeline was saved elsewhere") and "Nothing was overwritten" in banner.inner_text()
    assert Pipeline.objects.get(pk=p.pk).draft["nodes"][0]["parameters"]["value"] == 3
    page.shot("conflict")
    banner.get_by_text("Reload the latest version").click()
    page.wait_for_selector("#pipeline-name >> text=changed elsewhere")
