"""The designer's layout (issue 15), from bounding boxes: side panes that collapse (the canvas takes
their width, the choice kept across reloads), and a page that holds together at 1440 and 1024 px
wide: palette, canvas and pane side by side, toolbar buttons and tabs apart and on screen, the
pane's form inside the pane."""
import pytest
from django.core.files.base import ContentFile
from playwright.sync_api import expect

from designer.pipelines.models import Dataset
from tests.e2e.helpers import inside, open_designer, overlap, select
from tests.pipes import link, pipeline
from tests.pipes import node as n

pytestmark = pytest.mark.browser


def training_draft(owner):
    """A dataset, Convert to Image Directory, Split, ResNet and Train PyTorch Model, linked."""
    ds = Dataset(owner=owner, name="digits", size=4)
    ds.file.save("digits.zip", ContentFile(b"none"), save=True)
    doc = pipeline(
        [n("dataset", "dataset", dataset=ds.id), n("convert", "convert_to_image_directory"),
         n("split", "split_image_directory", fraction=0.9, random_seed=0), n("resnet", "resnet", model_name="resnet18", pretrained=False),
         n("train", "train_pytorch_model", epochs=2, batch_size=16, warmup_step_number=0, learning_rate=0.05, random_seed=1, patience=3, print_frequency=10)],
        [link("dataset", "convert", "dataset", "input_dataset"), link("convert", "split", "image_directory", "image_directory"),
         link("split", "train", "results_dataset1", "training_dataset"), link("split", "train", "results_dataset2", "validation_dataset"),
         link("resnet", "train", "untrained_model", "untrained_model")])
    doc["layout"] = {"dataset": {"x": 40, "y": 20}, "convert": {"x": 40, "y": 120}, "split": {"x": 40, "y": 220},
                     "resnet": {"x": 320, "y": 220}, "train": {"x": 180, "y": 330}}
    return doc


def box(page, selector):
    b = page.locator(selector).bounding_box()
    assert b, f"{selector} is not on screen"
    return b


def right(b):
    return b["x"] + b["width"]


def visible_boxes(page, selector):
    """{name: box} of the elements that are shown."""
    out = {}
    for i, el in enumerate(page.locator(selector).all()):
        if el.is_visible():
            name = (el.get_attribute("id") or el.inner_text() or str(i)).strip()
            out[name] = el.bounding_box()
    return out


def apart(boxes, what):
    names = list(boxes)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            assert not overlap(boxes[a], boxes[b]), f"{what}: {a!r} {boxes[a]} overlaps {b!r} {boxes[b]}"


def check_layout(page, width, height):
    viewport = {"x": 0, "y": 0, "width": width, "height": height}
    assert page.evaluate("document.documentElement.scrollWidth") <= width, "the page scrolls sideways"
    palette, column, pane = box(page, ".palette"), box(page, ".canvas-column"), box(page, ".pane")
    assert not overlap(palette, column) and not overlap(column, pane) and not overlap(palette, pane)
    for b in (palette, column, pane):
        assert inside(b, viewport), b
    assert box(page, "#canvas")["width"] >= 450, "the canvas is too narrow"
    buttons = visible_boxes(page, ".toolbar button, .toolbar a.button")
    assert len(buttons) >= 12, buttons
    apart(buttons, "toolbar")
    for name, b in buttons.items():
        assert inside(b, viewport), f"{name} {b} is off screen"
        assert inside(b, column), f"{name} {b} is outside the canvas column"
    tabs = visible_boxes(page, ".pane [role=tab]")
    assert len(tabs) == 5
    apart(tabs, "tabs")
    for name, b in tabs.items():
        assert inside(b, pane), f"the tab {name} {b} is outside the pane {pane}"
    # a narrow window starts with the minimap hidden (shell.js): its toggle shows it
    if page.locator("#minimap").is_hidden():
        assert width < 1280
        page.click("#toggle-minimap")
    toggle = box(page, "#toggle-minimap")
    assert inside(toggle, column) and not overlap(toggle, box(page, "#problems")) and not overlap(toggle, box(page, "#minimap"))
    # the panes' handles on the canvas's edges: clear of the toolbar and of the minimap
    for handle in ("#toggle-palette", "#toggle-pane"):
        b = box(page, handle)
        assert inside(b, column), f"{handle} {b} is outside the canvas column"
        assert not overlap(b, box(page, ".toolbar")) and not overlap(b, box(page, "#minimap")), handle
    # the minimap: whole (its borders too) inside the canvas, above the problems bar, and smaller
    # on a narrow canvas, where it would cover a good part of the pipeline
    minimap, wrap = box(page, "#minimap"), box(page, ".canvas-wrap")
    assert inside(minimap, wrap) and not overlap(minimap, box(page, "#problems")), (minimap, wrap)
    assert minimap["width"] <= (202 if width >= 1280 else 152) and minimap["width"] / box(page, "#canvas")["width"] < 0.3
    # the pane does not scroll sideways, and what is in it is inside it
    assert page.evaluate("(() => { const p = document.querySelector('.pane'); return p.scrollWidth <= p.clientWidth; })()")
    return pane, tabs


def controls_inside_pane(page, pane):
    controls = page.locator("#tab-module input:visible, #tab-module select:visible, #tab-module textarea:visible, #tab-module button:visible").all()
    assert len(controls) >= 5
    for c in controls:
        b = c.bounding_box()
        assert b["x"] >= pane["x"] - 0.5 and right(b) <= right(pane) + 0.5, f"{c} {b} is outside the pane {pane}"


def on_one_row(tabs):
    return len({round(b["y"]) for b in tabs.values()}) == 1


@pytest.mark.parametrize("width,height", [(1440, 900), (1024, 768)])
def test_the_designer_holds_together_with_a_node_selected(page, users, width, height):
    page.set_viewport_size({"width": width, "height": height})
    open_designer(page, users["owner"], training_draft(users["owner"]), name="Digits: ResNet-18 fine-tuned on the scanned forms, second attempt")
    select(page, "train")
    # a long pipeline name gives way in the top bar: one line, every link and Sign out on screen
    assert box(page, ".topbar")["height"] < 50
    assert page.evaluate("(() => { const s = document.getElementById('save-state'); return s.scrollWidth <= s.clientWidth; })()")
    for b in visible_boxes(page, ".topbar a, .topbar button").values():
        assert inside(b, {"x": 0, "y": 0, "width": width, "height": height}), b
    pane, tabs = check_layout(page, width, height)
    controls_inside_pane(page, pane)
    assert on_one_row(tabs), tabs
    page.shot(f"module-tab-{width}")
    page.click(".pane [role=tab][data-tab=outputs]")
    expect(page.locator("#tab-outputs")).to_be_visible()
    pane, tabs = check_layout(page, width, height)
    page.shot(f"outputs-tab-{width}")
    assert on_one_row(tabs), f"'Outputs + logs' selected wraps the tabs: {tabs}"


@pytest.mark.parametrize("width,height", [(1440, 900), (1024, 768)])
def test_fit_puts_no_module_under_the_minimap(page, users, width, height):
    """Four modules at the corners of a rectangle of the canvas's own shape: fitted to the whole
    canvas, the last one would lie under the minimap in the bottom-right corner."""
    page.set_viewport_size({"width": width, "height": height})
    open_designer(page, users["owner"])
    if width < 1280:  # hidden at first in a narrow window: shown, and so from the next opening on
        page.click("#toggle-minimap")
    canvas = box(page, "#canvas")
    w, h = 2 * canvas["width"], 2 * canvas["height"]
    doc = pipeline([n(f"c{i}", "toy_source", value=1) for i in range(4)], [])
    doc["layout"] = {"c0": {"x": 0, "y": 0}, "c1": {"x": w, "y": 0}, "c2": {"x": 0, "y": h}, "c3": {"x": w, "y": h}}
    open_designer(page, users["owner"], doc, name="corners")  # opened: fitted
    for fitted_by in ("opening", "the Fit button"):
        if fitted_by == "the Fit button":
            page.click("#zoom-in")
            page.click("#fit")
        page.wait_for_function("document.querySelectorAll('#canvas g.x6-node').length === 4")
        minimap, canvas = box(page, "#minimap"), box(page, "#canvas")
        nodes = {i: box(page, f'#canvas g[data-cell-id="c{i}"]') for i in range(4)}
        page.shot(f"fit-beside-minimap-{width}")
        for i, b in nodes.items():
            assert not overlap(b, minimap), f"after {fitted_by}, module c{i} {b} is under the minimap {minimap}"
            assert inside(b, canvas), f"after {fitted_by}, module c{i} {b} is not in view in {canvas}"


def canvas_width(page):
    return page.evaluate("document.querySelector('#canvas svg').getBoundingClientRect().width")


def collapse(page, toggle, aside):
    """Click a pane's toggle; returns the canvas's box before and after, once the graph followed."""
    before, svg_before = box(page, "#canvas"), canvas_width(page)
    button = page.locator(toggle)
    expect(button).to_have_attribute("aria-expanded", "true")
    button.click()
    expect(button).to_have_attribute("aria-expanded", "false")
    expect(page.locator(aside)).to_be_hidden()
    # X6 resizes the graph with its container (autoResize): the drawing area grows too
    page.wait_for_function(f"document.querySelector('#canvas svg').getBoundingClientRect().width > {svg_before + 100}")
    return before, box(page, "#canvas")


def tab_to(page, element_id, presses=60):
    for _ in range(presses):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.id") == element_id:
            return
    raise AssertionError(f"Tab never reaches #{element_id}")


def test_the_side_panes_collapse_give_the_canvas_their_width_and_stay_so(page, users):
    page.set_viewport_size({"width": 1440, "height": 900})
    p = open_designer(page, users["owner"], training_draft(users["owner"]))
    palette_width, pane_width = box(page, ".palette")["width"], box(page, ".pane")["width"]
    for toggle, aside in (("#toggle-palette", ".palette"), ("#toggle-pane", ".pane")):
        button = page.locator(toggle)
        expect(button).to_be_visible()
        assert button.get_attribute("aria-controls") == page.locator(aside).get_attribute("id")
        assert "hide" in button.get_attribute("title").lower()

    before, after = collapse(page, "#toggle-palette", ".palette")
    assert after["x"] < before["x"] - palette_width + 20 and after["width"] > before["width"] + palette_width - 20, (before, after)
    page.shot("palette-collapsed")
    before, after = collapse(page, "#toggle-pane", ".pane")
    assert after["width"] > before["width"] + pane_width - 20, (before, after)
    assert right(after) > 1440 - 20
    assert "show" in page.get_attribute("#toggle-pane", "title").lower()
    page.shot("both-collapsed")

    # selecting a node does not force the details open; its toggle stays there to reopen it
    select(page, "train")
    expect(page.locator(".pane")).to_be_hidden()
    expect(page.locator("#toggle-pane")).to_be_visible()
    expect(page.locator("#toggle-pane")).to_contain_text("Details")
    # its handle is marked: the module's parameters wait in the hidden pane
    expect(page.locator("#toggle-pane[data-news]")).to_be_visible()
    page.shot("selected-while-collapsed")

    # the choice is kept across a reload
    page.goto(f"{page.base}/pipelines/{p.id}/")
    page.wait_for_selector("html[data-designer-ready=true]")
    expect(page.locator(".palette")).to_be_hidden()
    expect(page.locator(".pane")).to_be_hidden()
    expect(page.locator("#toggle-palette")).to_have_attribute("aria-expanded", "false")
    assert box(page, "#canvas")["width"] > 1400
    assert canvas_width(page) > 1400
    select(page, "train")

    # from the keyboard: the toggles are reached with Tab and pressed with Enter or Space
    tab_to(page, "toggle-palette")
    page.keyboard.press("Enter")
    expect(page.locator(".palette")).to_be_visible()
    tab_to(page, "toggle-pane")
    page.keyboard.press("Space")
    expect(page.locator(".pane")).to_be_visible()
    expect(page.locator("#node-form[data-node=train]")).to_be_visible()
    expect(page.locator("#toggle-pane[data-news]")).to_have_count(0)
    assert abs(box(page, ".palette")["width"] - palette_width) < 1 and abs(box(page, ".pane")["width"] - pane_width) < 1
    page.wait_for_function(f"document.querySelector('#canvas svg').getBoundingClientRect().width < {1440 - palette_width - pane_width + 5}")
    page.shot("expanded-again")

    # a script asks for what a hidden pane holds (a menu's "View log"): the pane shows
    page.click("#toggle-pane")
    expect(page.locator(".pane")).to_be_hidden()
    page.evaluate("document.getElementById('tab-outputs').dispatchEvent(new CustomEvent('pane:show', { bubbles: true }))")
    expect(page.locator(".pane")).to_be_visible()
    expect(page.locator("#toggle-pane")).to_have_attribute("aria-expanded", "true")
    page.reload()
    page.wait_for_selector("html[data-designer-ready=true]")
    expect(page.locator(".palette")).to_be_visible()
    expect(page.locator(".pane")).to_be_visible()
