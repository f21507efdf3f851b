"""The right-click menu of a module (run settings, regenerate output, duplicate, delete, view
outputs, view log) and of a link (delete); Shift+F10 or the Menu key opens it for the module
selected; a right-drag still pans the canvas, without a menu; the menu stays in the window."""
import pytest

from designer.pipelines.models import Run
from tests.e2e.helpers import centre, node, open_designer, saved
from tests.machine import patience
from tests.pipes import link, pipeline
from tests.pipes import node as n

pytestmark = pytest.mark.browser
MENU = "#context-menu"


def items(page):
    return page.locator(f"{MENU} [role^=menuitem]").all_inner_texts()


def right_click(page, locator, dx=60, dy=15):
    box = locator.bounding_box()
    page.mouse.click(box["x"] + dx, box["y"] + dy, button="right")
    page.locator(MENU).wait_for()


def choose(page, label):
    page.locator(f"{MENU} [role^=menuitem]", has_text=label).click()
    page.locator(MENU).wait_for(state="detached")


def focused(page):
    return page.evaluate("document.activeElement.textContent")


def two_nodes():
    doc = pipeline([n("src", "toy_source", value=1), n("dist", "toy_pane_distributed")], [link("src", "dist")])
    doc["layout"] = {"src": {"x": 100, "y": 60}, "dist": {"x": 100, "y": 220}}
    return doc


def test_a_modules_menu_runs_its_commands(page, users):
    open_designer(page, users["owner"], two_nodes())
    right_click(page, node(page, "dist"))
    menu = page.locator(MENU)
    assert menu.get_attribute("role") == "menu"
    assert items(page) == ["Run settings", "Regenerate output", "Duplicate", "Delete", "View outputs", "View log"]
    assert focused(page) == "Run settings"  # the first item has the focus
    page.shot("node-menu")
    # near the point clicked
    b, d = menu.bounding_box(), node(page, "dist").bounding_box()
    assert abs(b["x"] - (d["x"] + 60)) <= 2 and abs(b["y"] - (d["y"] + 15)) <= 2
    # Run settings: the module selected, its Module tab scrolled to its run settings
    choose(page, "Run settings")
    page.wait_for_selector("#node-form[data-node=dist]")
    assert page.evaluate("document.activeElement.id") == "rs-compute_target"  # the first of the run settings
    pane = page.locator("#tab-module").bounding_box()
    fieldset = page.locator("#node-form fieldset", has_text="Run settings").bounding_box()
    assert pane["y"] <= fieldset["y"] < pane["y"] + pane["height"]
    page.shot("run-settings")

    # a module without run settings has no such item
    right_click(page, node(page, "src"))
    assert "Run settings" not in items(page)
    # Regenerate output: a checked toggle, the field the pane's box sets
    regenerate = page.locator(f"{MENU} [role=menuitemcheckbox]")
    assert regenerate.inner_text() == "Regenerate output" and regenerate.get_attribute("aria-checked") == "false"
    choose(page, "Regenerate output")
    page.wait_for_selector("#node-form[data-node=src]")
    assert page.is_checked("#regenerate-output")
    assert saved(page).draft["nodes"][0]["regenerate_output"] is True
    right_click(page, node(page, "src"))
    assert page.get_attribute(f"{MENU} [role=menuitemcheckbox]", "aria-checked") == "true"
    page.shot("regenerate-checked")
    # Duplicate: a copy beside it
    choose(page, "Duplicate")
    copy = [i for i in page.evaluate("designer.graph.getNodes().map(n => n.id)") if i not in ("src", "dist")][0]
    s, c = node(page, "src").bounding_box(), node(page, copy).bounding_box()
    assert c["x"] > s["x"] + s["width"] and abs(c["y"] - s["y"]) < 2
    draft = saved(page).draft
    (doc,) = [d for d in draft["nodes"] if d["id"] == copy]
    assert doc["kind"] == "toy_source" and doc["regenerate_output"] is True
    # a second copy does not land on the first: it goes right past it
    right_click(page, node(page, "src"))
    choose(page, "Duplicate")
    (second,) = [i for i in page.evaluate("designer.graph.getNodes().map(n => n.id)") if i not in ("src", "dist", copy)]
    at = page.evaluate(f"[['{copy}', '{second}'].map(id => designer.graph.getCellById(id).getBBox())]")[0]
    assert at[1]["x"] >= at[0]["x"] + at[0]["width"] and at[1]["y"] == at[0]["y"]
    assert node(page, second).is_visible()  # the view follows it when it lands out of sight
    right_click(page, node(page, second))
    choose(page, "Delete")
    # Delete
    right_click(page, node(page, copy))
    choose(page, "Delete")
    assert sorted(page.evaluate("designer.graph.getNodes().map(n => n.id)")) == ["dist", "src"]


def test_the_keyboard_opens_moves_through_and_closes_the_menu(page, users):
    open_designer(page, users["owner"], two_nodes())
    page.locator("#canvas").focus()
    page.keyboard.press("Control+a")
    page.keyboard.press("Shift+F10")  # two selected: no menu
    assert page.locator(MENU).count() == 0
    page.keyboard.press("Escape")
    box = node(page, "src").bounding_box()
    page.mouse.click(box["x"] + 60, box["y"] + 15)
    page.keyboard.press("Shift+F10")
    page.locator(MENU).wait_for()
    assert focused(page) == "Regenerate output"
    page.keyboard.press("ArrowUp")  # round to the last
    assert focused(page) == "View log"
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    assert focused(page) == "Duplicate"
    page.keyboard.press("Escape")
    page.locator(MENU).wait_for(state="detached")
    assert page.evaluate("document.activeElement.id") == "canvas"
    assert len(page.evaluate("designer.graph.getNodes()")) == 2
    # the Menu key too; Enter runs the item
    page.keyboard.press("ContextMenu")
    page.locator(MENU).wait_for()
    assert focused(page) == "Regenerate output"
    page.keyboard.press("End")
    page.keyboard.press("ArrowUp")
    page.keyboard.press("ArrowUp")
    assert focused(page) == "Delete"
    page.keyboard.press("Enter")
    page.locator(MENU).wait_for(state="detached")
    assert page.evaluate("designer.graph.getNodes().map(n => n.id)") == ["dist"]
    assert page.evaluate("document.activeElement.id") == "canvas"
    page.keyboard.press("Control+z")
    assert sorted(page.evaluate("designer.graph.getNodes().map(n => n.id)")) == ["dist", "src"]
    # a click outside closes it
    right_click(page, node(page, "src"))
    c = page.locator("#canvas").bounding_box()
    page.mouse.click(c["x"] + c["width"] - 300, c["y"] + 30)
    page.locator(MENU).wait_for(state="detached")


def test_a_links_menu_deletes_it_and_a_right_drag_pans_without_a_menu(page, users):
    open_designer(page, users["owner"], two_nodes())
    x, y = centre(page.locator('#canvas g[data-cell-id="src-dist-input"] path').first)
    page.mouse.click(x, y, button="right")
    page.locator(MENU).wait_for()
    assert items(page) == ["Delete"]
    page.shot("link-menu")
    choose(page, "Delete")
    assert page.evaluate("designer.graph.getEdges().length") == 0
    assert saved(page).draft["links"] == []
    # a right-drag from a module or the blank canvas pans, with no menu
    for start in (node(page, "src"), page.locator("#canvas")):
        before = node(page, "src").bounding_box()
        b = start.bounding_box()
        page.mouse.move(b["x"] + 50, b["y"] + 20)
        page.mouse.down(button="right")
        page.mouse.move(b["x"] + 130, b["y"] + 80, steps=6)
        page.mouse.up(button="right")
        after = node(page, "src").bounding_box()
        assert round(after["x"] - before["x"]) == 80 and round(after["y"] - before["y"]) == 60
        assert page.locator(MENU).count() == 0


def test_the_menu_stays_in_the_window_near_its_edges(page, users):
    page.set_viewport_size({"width": 1024, "height": 700})
    open_designer(page, users["owner"], two_nodes())
    # a module at the bottom of the window: the menu opens above the point, in view
    c = page.locator("#canvas").bounding_box()
    page.evaluate("([x, y]) => { const p = designer.graph.clientToLocal(x, y); designer.graph.getCellById('src').position(p.x, p.y); }",
                  [c["x"] + 40, c["y"] + c["height"] - 30])
    right_click(page, node(page, "src"), dx=60, dy=10)
    m = page.locator(MENU).bounding_box()
    vp = page.viewport_size
    assert m["y"] >= 0 and m["y"] + m["height"] <= vp["height"] and m["x"] + m["width"] <= vp["width"]
    page.shot("menu-near-bottom")


def test_view_outputs_and_view_log_show_the_modules_outputs_and_log(page, users, shared_worker):
    open_designer(page, users["owner"], two_nodes())
    page.click("#submit")
    page.wait_for_selector("#run-banner[data-status]:has-text('Run #')", timeout=40_000)
    page.wait_for_selector("#run-banner[data-status=completed], #run-banner[data-status=failed]", timeout=patience(60_000))
    run = Run.objects.get()
    page.click(".tabs [data-tab=runs]")
    right_click(page, node(page, "src"))
    choose(page, "View outputs")
    page.wait_for_selector(f"#tab-outputs h3:has-text('in run #{run.id}')")
    assert "Toy source" in page.inner_text("#tab-outputs h3") or "src" in page.inner_text("#tab-outputs h3")
    assert page.get_attribute(".tabs [data-tab=outputs]", "aria-selected") == "true"
    page.click(".tabs [data-tab=module]")
    # the details pane hidden: View log shows it again
    page.click("#toggle-pane")
    page.locator("#details-pane").wait_for(state="hidden")
    right_click(page, node(page, "src"))
    choose(page, "View log")
    page.locator("#details-pane").wait_for()
    page.wait_for_function("document.activeElement && document.activeElement.id === 'log-text'")
    page.wait_for_selector("#log-text:has-text('wrote 1')")
    log = page.locator("#log-text").bounding_box()
    pane = page.locator("#tab-outputs").bounding_box()
    vp = page.viewport_size
    assert pane["y"] <= log["y"] < vp["height"]
    page.shot("view-log")
