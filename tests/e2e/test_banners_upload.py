"""Issue 15, defects 4, 5 and 7: the banners over the canvas (a banner tied to a condition goes
with it; no banner moves the canvas), the details pane's tabs on one row at 1440 px, and an upload
whose result is seen; the same name again is that dataset's next version (issue 42), listed once."""
import zipfile

import pytest
from playwright.sync_api import expect

from designer.pipelines.models import Dataset
from tests.e2e.helpers import node, open_designer, set_parameters
from tests.pipes import link, pipeline
from tests.pipes import node as doc_node

pytestmark = pytest.mark.browser

TABS = "aside.pane [role=tab]"


def with_a_problem():
    """A source whose value is over its maximum (1000): one problem, fixed in the pane."""
    return pipeline([doc_node("src", "toy_source", value=5000), doc_node("add", "toy_add", amount=1)], [link("src", "add")])


def box(page, selector):
    return page.locator(selector).bounding_box()


def inside(inner, outer, slack=0.5):
    return (inner["x"] >= outer["x"] - slack and inner["y"] >= outer["y"] - slack
            and inner["x"] + inner["width"] <= outer["x"] + outer["width"] + slack
            and inner["y"] + inner["height"] <= outer["y"] + outer["height"] + slack)


def in_window(page, selector):
    b = box(page, selector)
    size = page.viewport_size
    return b is not None and inside(b, {"x": 0, "y": 0, "width": size["width"], "height": size["height"]})


def test_the_cannot_run_banner_goes_once_the_problem_is_fixed(page, users):
    open_designer(page, users["owner"], with_a_problem())
    page.wait_for_selector("#problems.bad")
    page.click("#submit")
    banner = page.locator("#banner.error")
    banner.wait_for()
    assert "The pipeline cannot run: fix the 1 problem(s) listed below the canvas first." in banner.inner_text()
    page.shot("cannot-run")
    set_parameters(page, "src", {"value": 10})  # the pane's own box; autosave answers: no problems
    page.wait_for_selector("#problems.ok")
    page.wait_for_selector("#banner", state="hidden")
    page.shot("fixed")


def test_a_banner_over_the_canvas_does_not_move_it(page, users):
    page.set_viewport_size({"width": 1440, "height": 900})
    open_designer(page, users["owner"], with_a_problem())
    before = box(page, "#canvas")
    toolbar = box(page, ".toolbar")
    column = box(page, ".canvas-column")
    page.click("#submit")
    page.locator("#banner.error").wait_for()
    shown = box(page, "#banner")
    assert box(page, "#canvas") == before
    assert inside(shown, column) and shown["y"] >= toolbar["y"] + toolbar["height"] - 0.5
    # its dismiss button is there to press, and not under anything
    close = page.locator("#banner .close")
    assert close.is_visible() and inside(close.bounding_box(), shown)
    page.shot("error-banner")
    close.click()
    page.wait_for_selector("#banner", state="hidden")
    assert box(page, "#canvas") == before

    set_parameters(page, "src", {"value": 10})
    page.wait_for_selector("#problems.ok")
    before = box(page, "#canvas")  # the problems bar below it is one line now: the canvas is taller
    page.click("#submit")
    page.wait_for_selector("#run-banner:not([hidden])")
    # then a note as well: the two banners one under the other, the canvas still where it was
    box_ = node(page, "src").bounding_box()
    page.mouse.click(box_["x"] + 60, box_["y"] + 15)
    page.keyboard.press("Control+c")
    # measured in the frame the note shows (it clears itself after 4 s: a busy machine may get there first)
    seen = page.wait_for_function("""() => {
        const note = document.querySelector('#banner.info');
        if (!note || note.hidden || !note.textContent.includes('Copied 1 module(s).')) return null;
        const r = (sel) => { const b = document.querySelector(sel).getBoundingClientRect(); return {x: b.x, y: b.y, width: b.width, height: b.height}; };
        return {run: r('#run-banner'), note: r('#banner'), canvas: r('#canvas')};
    }""").json_value()
    run_banner, note = seen["run"], seen["note"]
    page.shot("run-banner-and-note")
    assert seen["canvas"] == before
    for b in (run_banner, note):
        assert inside(b, column) and b["y"] >= toolbar["y"] + toolbar["height"] - 0.5 and inside(b, before)
    lower, upper = sorted((run_banner, note), key=lambda b: b["y"], reverse=True)
    assert lower["y"] >= upper["y"] + upper["height"] - 0.5, "the banners overlap"
    page.wait_for_selector("#banner", state="hidden", timeout=15_000)  # the note still clears by itself
    assert box(page, "#canvas") == before


def test_fit_puts_every_module_below_the_banners(page, users):
    """A long pipeline fitted while banners lie over the canvas's top: its first module is not
    under them (Fit leaves their height free), and without banners Fit uses the whole height."""
    page.set_viewport_size({"width": 1440, "height": 900})
    ids = [f"n{i}" for i in range(8)]
    doc = pipeline([doc_node(ids[0], "toy_source", value=5000)] + [doc_node(i, "toy_add", amount=1) for i in ids[1:]],
                   [link(a, b) for a, b in zip(ids, ids[1:])])
    doc["layout"] = {nid: {"x": 200, "y": 180 * i} for i, nid in enumerate(ids)}  # taller than the canvas
    open_designer(page, users["owner"], doc)
    page.wait_for_selector("#problems.bad")
    page.click("#submit")
    page.locator("#banner.error").wait_for()
    page.click("#fit")
    page.wait_for_function("""() => { const b = document.querySelector('#banner').getBoundingClientRect();
        return document.querySelector('#canvas g[data-cell-id="n0"]').getBoundingClientRect().top >= b.bottom; }""", timeout=5_000)
    top, last, banner, canvas = box(page, '#canvas g[data-cell-id="n0"]'), box(page, '#canvas g[data-cell-id="n7"]'), box(page, "#banner"), box(page, "#canvas")
    page.shot("fit-under-banner")
    assert top["y"] >= banner["y"] + banner["height"], (top, banner)
    assert last["y"] + last["height"] <= canvas["y"] + canvas["height"], (last, canvas)  # still all in view
    page.locator("#banner .close").click()
    page.wait_for_selector("#banner", state="hidden")
    page.click("#fit")  # no banner: the pipeline is drawn from 40 px under the canvas's top
    page.wait_for_function("""() => document.querySelector('#canvas g[data-cell-id="n0"]').getBoundingClientRect().top
        < document.querySelector('#canvas').getBoundingClientRect().top + 44""", timeout=5_000)


@pytest.mark.parametrize("tab", ["module", "outputs"])
def test_the_pane_tabs_stay_on_one_row_at_1440(page, users, tab):
    page.set_viewport_size({"width": 1440, "height": 900})
    open_designer(page, users["owner"], with_a_problem())
    page.click(f"{TABS}[data-tab={tab}]")
    page.wait_for_selector(f"{TABS}[data-tab={tab}][aria-selected=true]")
    pane = box(page, "aside.pane")
    tabs = [t.bounding_box() for t in page.locator(TABS).all()]
    page.shot(f"tabs-{tab}")
    assert len(tabs) == 5
    assert len({round(t["y"]) for t in tabs}) == 1, f"the tabs are on more than one row: {tabs}"
    assert all(inside(t, pane) for t in tabs), f"a tab is outside the pane {pane}: {tabs}"


def digits_zip(tmp_path):
    archive = tmp_path / "digits.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("0/a.png", b"\x89PNG fake")
    return archive


def upload(page, archive):
    page.set_input_files("#upload-file", str(archive))
    page.locator("#upload").scroll_into_view_if_needed()
    # the palette scrolled to its end, as one that was scrolled down to the form by hand
    page.evaluate("document.querySelector('.palette').scrollTop = 1e6")
    page.click("#upload")


def test_an_upload_is_seen_and_the_same_name_again_is_its_next_version(page, users, tmp_path):
    page.set_viewport_size({"width": 1440, "height": 600})
    for i in range(30):
        Dataset.objects.create(owner=users["owner"], name=f"set {i}", file=f"datasets/{users['owner'].id}/x/set{i}.zip")
    Dataset.objects.create(owner=users["stranger"], name="digits", file=f"datasets/{users['stranger'].id}/x/digits.zip")
    open_designer(page, users["owner"])
    assert page.evaluate("(p => p.scrollHeight > p.clientHeight)(document.querySelector('.palette'))")
    archive = digits_zip(tmp_path)
    upload(page, archive)
    page.wait_for_selector("#upload-status >> text=Uploaded digits")
    ds = Dataset.objects.get(owner=users["owner"], name="digits")  # another user's 'digits' did not stop it
    page.shot("uploaded")
    assert in_window(page, "#upload-status")
    added = page.locator(f"#dataset-list .palette-item[data-dataset='{ds.id}']")
    assert "highlight" in added.get_attribute("class")
    assert page.inner_text("#upload-status") == f"Uploaded digits (dataset {ds.id}): first in My datasets, marked; drag it onto the canvas."

    upload(page, archive)
    page.wait_for_selector("#upload-status >> text=Uploaded digits version 2")
    v2 = Dataset.objects.get(owner=users["owner"], name="digits", version=2)
    assert page.inner_text("#upload-status") == (f"Uploaded digits version 2 (dataset {v2.id}): first in My datasets, "
                                                 "marked; drag it onto the canvas.")
    page.shot("version-2")
    assert in_window(page, "#upload-status")
    # the palette lists the name once, as its latest version, marked
    assert page.locator("#dataset-list .palette-item", has_text="digits").count() == 1
    assert page.locator("#dataset-list .palette-item.highlight").get_attribute("data-dataset") == str(v2.id)


def test_a_run_with_no_worker_says_so_and_shows_the_commands_as_code(page, users):
    from designer.celery import app

    app.control.purge()
    try:
        open_designer(page, users["owner"], with_a_problem())
        set_parameters(page, "src", {"value": 10})
        page.wait_for_selector("#problems.ok")
        page.click("#submit")
        summary = page.locator("#run-summary")
        expect(summary).to_contain_text("No worker is running", timeout=20_000)
        # the server quotes the commands in backticks: the page shows them as code, without the marks
        assert "`" not in summary.inner_text()
        assert summary.locator("code").all_inner_texts() == ["make run", "make worker"]
        page.shot("no-worker")
    finally:
        app.control.purge()  # the queued task is not left for the next test's worker
