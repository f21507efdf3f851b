"""Canvas quick search (as ComfyUI's): a double-click on the blank canvas, or a letter typed on the
focused canvas, opens a search box of the palette's entries; arrows move, Enter (or a click) adds
the module chosen there, Escape closes without a change, one undo takes the addition back. With
one module selected, the new one is linked from it ("links from ...")."""
import pytest

from designer.pipelines.models import Dataset
from tests.e2e.helpers import drag, links, node, open_designer, port, saved, select
from tests.pipes import node as n
from tests.pipes import pipeline

pytestmark = pytest.mark.browser


def node_ids(page):
    return sorted(page.evaluate("designer.graph.getNodes().map(n => n.id)"))


def options(page):
    return page.locator("#quick-search [role=option] .quick-label").all_inner_texts()


def chosen(page):
    return page.locator("#quick-search [role=option][aria-selected=true] .quick-label").inner_text()


def test_a_double_click_opens_the_search_there_and_enter_adds_the_module_at_that_point(page, users):
    open_designer(page, users["owner"])
    c = page.locator("#canvas").bounding_box()
    x, y = c["x"] + 300, c["y"] + 200
    page.mouse.dblclick(x, y)
    box = page.locator("#quick-search")
    box.wait_for()
    b = box.bounding_box()
    assert abs(b["x"] - x) <= 2 and abs(b["y"] - y) <= 2  # the box opens at the point
    assert page.evaluate("document.activeElement.getAttribute('role')") == "combobox"
    page.keyboard.type("toy")
    labels = options(page)
    assert {"Toy source", "Toy add", "Toy sink"} <= set(labels)
    assert all(label.lower().startswith("toy") for label in labels)
    assert chosen(page) == labels[0]
    page.keyboard.press("ArrowDown")
    assert chosen(page) == labels[1]
    page.keyboard.press("ArrowUp")
    page.keyboard.press("ArrowUp")  # round to the last
    assert chosen(page) == labels[-1]
    page.shot("search-open")
    # Escape: closed, nothing added, the focus back on the canvas
    page.keyboard.press("Escape")
    box.wait_for(state="detached")
    assert node_ids(page) == []
    assert page.evaluate("document.activeElement.id") == "canvas"

    page.mouse.dblclick(x, y)
    page.keyboard.type("add")
    assert chosen(page) == "Toy add"
    page.keyboard.press("Enter")
    box.wait_for(state="detached")
    (nid,) = node_ids(page)
    nb = node(page, nid).bounding_box()
    assert nb["x"] < x < nb["x"] + nb["width"] and nb["y"] < y < nb["y"] + nb["height"]  # added at the point
    assert page.evaluate(f"designer.graph.getCellById('{nid}').getData().kind") == "toy_add"
    page.wait_for_selector(f"#node-form[data-node={nid}]")  # selected: its settings are shown
    page.shot("added-at-point")
    # one undo step takes it away
    page.keyboard.press("Control+z")
    assert node_ids(page) == []


def test_typing_on_the_canvas_searches_and_links_the_new_module_from_the_one_selected(page, users):
    Dataset.objects.create(owner=users["owner"], name="digits", size=100, file=f"datasets/{users['owner'].id}/digits/digits.zip")
    doc = pipeline([n("src", "toy_source", value=1)], [])
    doc["layout"] = {"src": {"x": 100, "y": 60}}
    open_designer(page, users["owner"], doc)
    select(page, "src")
    page.keyboard.press("a")  # the canvas has the focus after the click: the letter opens the search
    box = page.locator("#quick-search")
    box.wait_for()
    assert page.input_value("#quick-search input") == "a"
    assert page.inner_text("#quick-search-note") == "links from Toy source"
    page.keyboard.type("dd")
    assert chosen(page) == "Toy add"
    # a module that takes no image directory is added unlinked, and says so
    page.fill("#quick-search input", "sink")
    assert page.locator("#quick-search [aria-selected=true] .quick-nolink").inner_text() == "not linked"
    page.fill("#quick-search input", "toy add")
    page.shot("links-from")
    page.keyboard.press("Enter")
    box.wait_for(state="detached")
    (new,) = [i for i in node_ids(page) if i != "src"]
    src, added = node(page, "src").bounding_box(), node(page, new).bounding_box()
    assert abs(added["x"] - src["x"]) < 2 and added["y"] > src["y"] + src["height"]  # below the one selected
    assert links(saved(page).draft) == [("src", "out", new, "input")]
    # the new one is selected: typing again chains the next module from it
    assert page.evaluate("document.activeElement.id") == "canvas"
    page.keyboard.type("toy add")
    assert page.inner_text("#quick-search-note") == "links from Toy add"
    page.keyboard.press("Enter")
    box.wait_for(state="detached")
    third = [i for i in node_ids(page) if i not in ("src", new)][0]
    assert links(saved(page).draft) == sorted([("src", "out", new, "input"), (new, "out", third, "input")])
    page.shot("chained")
    # one undo takes the module and its link away
    page.keyboard.press("Control+z")
    assert third not in node_ids(page)
    assert links(saved(page).draft) == [("src", "out", new, "input")]

    # the user's datasets are entries too, and a click adds one
    page.keyboard.press("Escape")  # nothing selected: nothing to link from
    page.keyboard.type("digi")
    assert page.locator("#quick-search-note").count() == 0
    item = page.locator("#quick-search [role=option]", has_text="digits")
    assert "My datasets" in item.inner_text()
    item.click()
    box.wait_for(state="detached")
    data = [d for d in saved(page).draft["nodes"] if d["kind"] == "dataset"]
    assert len(data) == 1 and data[0]["parameters"]["dataset"] == Dataset.objects.get().id


def test_the_box_stays_in_the_window_near_its_edges(page, users):
    open_designer(page, users["owner"])
    c = page.locator("#canvas").bounding_box()
    # the canvas's lower left corner (the minimap is in the right one): the box opens above the point
    x, y = c["x"] + 20, c["y"] + c["height"] - 20
    page.mouse.dblclick(x, y)
    box = page.locator("#quick-search")
    box.wait_for()
    b = box.bounding_box()
    vw, vh = page.viewport_size["width"], page.viewport_size["height"]
    assert b["x"] >= 0 and b["x"] + b["width"] <= vw and b["y"] >= 0 and b["y"] + b["height"] <= vh
    assert abs(b["y"] + b["height"] - y) <= 2 and abs(b["x"] - x) <= 2
    page.shot("near-the-edge")
    # a click elsewhere closes it without a change
    page.mouse.click(c["x"] + 40, c["y"] + 40)
    box.wait_for(state="detached")
    assert node_ids(page) == []


def test_the_box_and_the_menu_follow_the_dark_theme(page, users):
    page.emulate_media(color_scheme="dark")
    open_designer(page, users["owner"], pipeline([n("src", "toy_source", value=1)], []))
    c = page.locator("#canvas").bounding_box()
    page.mouse.dblclick(c["x"] + 40, c["y"] + 40)
    box = page.locator("#quick-search")
    box.wait_for()
    surface = page.evaluate("getComputedStyle(document.documentElement).getPropertyValue('--surface').trim()")
    assert surface and box.evaluate("e => getComputedStyle(e).backgroundColor") != "rgb(255, 255, 255)"
    # white text on the entry chosen, on a blue dark enough to read it (4.6:1)
    chosen_style = "e => [getComputedStyle(e).backgroundColor, getComputedStyle(e).color]"
    assert page.locator("#quick-search [aria-selected=true]").evaluate(chosen_style) == ["rgb(31, 111, 235)", "rgb(255, 255, 255)"]
    page.shot("dark-search")
    page.keyboard.press("Escape")
    b = node(page, "src").bounding_box()
    page.mouse.click(b["x"] + 60, b["y"] + 15, button="right")
    menu = page.locator("#context-menu")
    menu.wait_for()
    assert menu.evaluate("e => getComputedStyle(e).backgroundColor") != "rgb(255, 255, 255)"
    page.shot("dark-menu")


def test_a_link_dropped_on_the_blank_canvas_asks_what_to_add_there_fed_from_that_output(page, users):
    open_designer(page, users["owner"], pipeline([n("split", "split_image_directory")], []))
    c = page.locator("#canvas").bounding_box()
    split = node(page, "split").bounding_box()
    # blank canvas, with room below and to the right for the box (it stays over the canvas: issue 42)
    drop = (min(split["x"] + split["width"] + 120, c["x"] + c["width"] - 370), split["y"] - 200)
    drag(page, port(page, "split", "out:results_dataset2"), drop)
    box = page.locator("#quick-search")
    box.wait_for()
    assert page.inner_text("#quick-search-note") == "links from Split Image Directory (Results dataset2)"
    b = box.bounding_box()
    assert abs(b["x"] - drop[0]) <= 6 and abs(b["y"] - drop[1]) <= 6  # where the link was dropped (its end snaps to the grid)
    assert c["y"] < b["y"]
    page.shot("dropped-link-search")
    # the modules that take an image directory come first: none of them is marked "not linked"
    assert page.locator("#quick-search [role=option]").first.locator(".quick-nolink").count() == 0
    assert options(page)[0] == "Apply Image Transformation"
    page.keyboard.type("toy add")
    page.keyboard.press("Enter")
    box.wait_for(state="detached")
    (added,) = [i for i in node_ids(page) if i != "split"]
    assert links(saved(page).draft) == [("split", "results_dataset2", added, "input")]
    # a click on an output (no drag) opens nothing
    port(page, "split", "out:results_dataset1").click()
    assert page.locator("#quick-search").count() == 0
