"""Canvas defects a newcomer tripped on (issue 15): the Module tab follows the selection, the
canvas is reached with Tab, a link being drawn lights only the inputs that accept it, Shift+click
adds to a selection and pasted copies land beside the originals."""
import pytest

from tests.e2e.helpers import drop_module, node, open_designer, port
from tests.pipes import chain, link, pipeline
from tests.pipes import node as n

pytestmark = pytest.mark.browser


def click_node(page, nid, modifiers=None):
    box = node(page, nid).bounding_box()
    page.mouse.move(box["x"] + 60, box["y"] + 15)
    if modifiers:
        page.keyboard.down(modifiers)
    page.mouse.down()
    page.mouse.up()
    if modifiers:
        page.keyboard.up(modifiers)


def selected(page):
    return sorted(page.evaluate("designer.graph.getPlugin('selection').getSelectedCells().filter(c => c.isNode()).map(c => c.id)"))


def module_tab(page):
    """What the Module tab shows, once any form in flight has come in."""
    page.wait_for_load_state("networkidle")
    return page.inner_text("#tab-module")


def test_the_module_tab_follows_the_selection_through_copy_paste_and_delete(page, users):
    open_designer(page, users["owner"], chain(3))
    # n1's form is slow to come: it arrives after n2 joined the selection, and must not show
    held = []
    page.route("**/pane", lambda route: held.append(route))
    with page.expect_request("**/pane"):
        click_node(page, "n1")
    click_node(page, "n2", "Control")
    assert selected(page) == ["n1", "n2"]
    page.wait_for_selector("#tab-module >> text=2 modules selected")
    assert len(held) == 1
    held[0].continue_()
    page.unroute("**/pane")
    assert "2 modules selected" in module_tab(page)
    assert page.locator("#node-form").count() == 0
    page.keyboard.press("Control+c")
    page.keyboard.press("Control+v")
    pasted = selected(page)
    assert len(pasted) == 2 and not {"n1", "n2"} & set(pasted)
    assert "2 modules selected" in module_tab(page)
    assert page.locator("#node-form").count() == 0
    page.shot("pasted-two-selected")
    page.keyboard.press("Delete")
    assert selected(page) == []
    assert sorted(page.evaluate("designer.graph.getNodes().map(n => n.id)")) == ["n0", "n1", "n2"]
    text = module_tab(page)
    assert "Select a module" in text and "selected" not in text
    assert page.locator("#node-form").count() == 0
    page.shot("deleted-empty-pane")
    # one node again: its own form
    click_node(page, "n0")
    page.wait_for_selector("#node-form[data-node=n0]")


def edge_colour(page):
    """The colour of the canvas's left edge on screen, halfway down."""
    from io import BytesIO

    from PIL import Image

    c = page.locator("#canvas").bounding_box()
    png = page.screenshot(clip={"x": c["x"], "y": c["y"] + c["height"] / 2, "width": 2, "height": 1})
    return Image.open(BytesIO(png)).convert("RGB").getpixel((1, 0))


def test_tab_reaches_the_canvas_with_a_focus_ring_and_the_keys_work(page, users):
    open_designer(page, users["owner"], chain(2))
    assert page.get_attribute("#canvas", "tabindex") == "0"
    page.focus("#fit")
    assert edge_colour(page) != (9, 105, 218)
    for _ in range(12):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.id") == "canvas":
            break
    assert page.evaluate("document.activeElement.id") == "canvas"
    # a ring the user sees: the canvas's edge drawn in the accent blue (#0969da)
    assert edge_colour(page) == (9, 105, 218)
    page.shot("canvas-focused-by-tab")
    page.keyboard.press("Control+a")
    assert selected(page) == ["n0", "n1"]
    before = page.evaluate("designer.graph.getCellById('n1').getPosition()")
    page.keyboard.press("ArrowDown")
    assert page.evaluate("designer.graph.getCellById('n1').getPosition()")["y"] == before["y"] + 10
    page.keyboard.press("Delete")
    assert page.evaluate("designer.graph.getNodes().length") == 0
    page.keyboard.press("Control+z")
    assert page.evaluate("designer.graph.getNodes().length") == 2
    # a click on the canvas focuses it too, without the ring (it is for keyboard users)
    page.focus("#fit")
    c = page.locator("#canvas").bounding_box()
    page.mouse.click(c["x"] + 30, c["y"] + 30)
    assert page.evaluate("document.activeElement.id") == "canvas"
    assert edge_colour(page) != (9, 105, 218)
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "canvas"
    assert edge_colour(page) == (9, 105, 218)


def lit_ports(page, candidates):
    """The input ports drawn with a highlight around them, found from what is on screen."""
    rings = [b for b in (h.bounding_box() for h in page.locator("#canvas .x6-highlight-stroke").all()) if b]
    lit = []
    for nid, pid in candidates:
        c = port(page, nid, pid).bounding_box()
        cx, cy = c["x"] + c["width"] / 2, c["y"] + c["height"] / 2
        if any(r["x"] <= cx <= r["x"] + r["width"] and r["y"] <= cy <= r["y"] + r["height"] for r in rings):
            lit.append((nid, pid))
    return lit


def test_a_link_being_drawn_lights_only_the_inputs_that_accept_it(page, users):
    doc = pipeline([n("src", "toy_source", value=1), n("other", "toy_source", value=2), n("fed", "toy_add"), n("free", "toy_add"),
                    n("sink", "toy_sink")], [link("other", "fed")])
    doc["layout"] = {"src": {"x": 300, "y": 40}, "other": {"x": 40, "y": 40}, "fed": {"x": 40, "y": 220}, "free": {"x": 300, "y": 220},
                     "sink": {"x": 560, "y": 220}}
    open_designer(page, users["owner"], doc)
    inputs = [("fed", "in:input"), ("fed", "in:extra"), ("free", "in:input"), ("free", "in:extra"), ("sink", "in:scores")]
    box = port(page, "src", "out:out").bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.down()
    page.mouse.move(box["x"] + 40, box["y"] + 80, steps=6)
    # fed's input is fed by the other source already; the sink wants ScoredDataset: neither is lit
    page.wait_for_selector("#canvas .x6-highlight-stroke")
    assert lit_ports(page, inputs) == [("fed", "in:extra"), ("free", "in:input"), ("free", "in:extra")]
    page.shot("drawing-lights-accepting-inputs")
    # dropped on the sink anyway: refused, with the reason
    s = port(page, "sink", "in:scores").bounding_box()
    page.mouse.move(s["x"] + s["width"] / 2, s["y"] + s["height"] / 2, steps=8)
    page.mouse.up()
    assert "Scores takes only a table of predictions" in page.inner_text("#banner")
    assert page.evaluate("designer.graph.getEdges().length") == 1


def test_shift_click_adds_to_the_selection_and_pastes_land_beside_the_originals(page, users):
    open_designer(page, users["owner"], chain(2))
    click_node(page, "n0")
    click_node(page, "n1", "Shift")
    assert selected(page) == ["n0", "n1"]
    click_node(page, "n1", "Shift")  # again: out of the selection
    assert selected(page) == ["n0"]
    page.keyboard.press("Control+c")
    page.keyboard.press("Control+v")
    (first,) = selected(page)
    page.keyboard.press("Control+v")
    (second,) = selected(page)
    boxes = {nid: node(page, nid).locator("rect").first.bounding_box() for nid in ("n0", first, second)}
    page.shot("pasted-beside")
    for a, b in (("n0", first), (first, second), ("n0", second)):
        p, q = boxes[a], boxes[b]
        assert abs(p["x"] - q["x"]) >= 30 or abs(p["y"] - q["y"]) >= 30, (a, b, boxes)
    # each copy stays visible: its label is not covered by the next one
    assert boxes[second]["y"] > boxes[first]["y"] > boxes["n0"]["y"]
    assert boxes[second]["x"] > boxes[first]["x"] > boxes["n0"]["x"]
    # the toolbar's Copy and Paste do the same
    click_node(page, "n1")
    page.click("#copy")
    page.click("#paste")
    (third,) = selected(page)
    n1, copy = (node(page, nid).locator("rect").first.bounding_box() for nid in ("n1", third))
    assert copy["x"] >= n1["x"] + 30 and copy["y"] >= n1["y"] + 30, (n1, copy)


def test_a_module_dropped_low_stays_in_view_when_the_problems_bar_grows(page, users):
    """Train PyTorch Model dropped near the canvas's bottom brings three problems: the bar under the
    canvas grows over where it was dropped, and the canvas brings it back into view (issue 30)."""
    page.set_viewport_size({"width": 1024, "height": 700})
    open_designer(page, users["owner"], pipeline([n("src", "toy_source", value=1)], []))
    area = page.locator("#canvas").bounding_box()
    train = drop_module(page, "Train PyTorch Model", area["width"] / 2, area["height"] - 45)
    page.wait_for_selector("#problems.bad >> text=3 problem(s)")
    page.wait_for_function("""(id) => { const c = document.querySelector('#canvas').getBoundingClientRect();
        const b = document.querySelector(`#canvas g[data-cell-id="${id}"]`).getBoundingClientRect();
        return b.top >= c.top && b.bottom <= c.bottom; }""", arg=train)
    page.shot("dropped-low-in-view")


# every link's drawn points ({x, y} in graph units, along its path, its ends left out) and the
# boxes of the modules it does not join: whether one of them lies inside one of those boxes
PASSES_BEHIND = """() => { const g = designer.graph; const out = [];
    for (const e of g.getEdges()) { const v = g.findViewByCell(e); const ends = [e.getSourceCellId(), e.getTargetCellId()];
      const pts = [...Array(39).keys()].map((i) => v.getPointAtRatio((i + 1) / 40)).filter(Boolean);
      for (const n of g.getNodes()) { if (ends.includes(n.id)) continue; const b = n.getBBox();
        if (pts.some((p) => p.x > b.x && p.x < b.x + b.width && p.y > b.y && p.y < b.y + b.height)) out.push([ends.join('->'), n.id]); } }
    return out; }"""
ROUTED = """(pair) => { const e = designer.graph.getEdges().find((x) => x.getTargetCellId() === pair);
                       const r = e.getRouter(); return r ? r.name : null; }"""


@pytest.mark.parametrize(("width", "scheme"), [(1440, "light"), (1024, "dark")])
def test_a_link_whose_curve_would_pass_behind_a_module_is_routed_around_it(page, users, width, scheme):
    """src feeds far, straight below mid, which it does not feed: drawn as a curve, the link would
    run behind mid and look as if it fed mid's ports (issue 30). It goes around mid instead, with
    right angles; src -> mid keeps its curve. Moved aside, mid no longer stands in the way: the link
    is a curve again. After Auto-layout, no link passes behind a module either."""
    page.set_viewport_size({"width": width, "height": 800})
    page.emulate_media(color_scheme=scheme)
    doc = pipeline([n("src", "toy_source", value=1), n("mid", "toy_add"), n("far", "toy_add")],
                   [link("src", "mid"), link("src", "far"), link("mid", "far", dst_port="extra")])
    doc["layout"] = {"src": {"x": 100, "y": 0}, "mid": {"x": 100, "y": 160}, "far": {"x": 100, "y": 320}}
    open_designer(page, users["owner"], doc)
    page.wait_for_function(f"({ROUTED})('far') === 'manhattan'")
    assert page.evaluate(ROUTED, "mid") is None
    assert page.evaluate(PASSES_BEHIND) == []
    page.shot(f"link-around-the-module-{width}-{scheme}")
    page.evaluate("designer.graph.getCellById('mid').position(420, 160)")
    page.wait_for_function(f"({ROUTED})('far') === null")
    assert page.evaluate(PASSES_BEHIND) == []
    page.click("#auto-layout")
    page.wait_for_function(f"({PASSES_BEHIND})().length === 0")
    page.shot(f"auto-layout-no-link-behind-a-module-{width}-{scheme}")
    assert page.evaluate("designer.graph.getEdges().every((e) => e.getZIndex() < 0)")  # links stay under the modules
