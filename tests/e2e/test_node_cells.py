"""Issue 15: what a node shows. Port names drawn on the node (not only in a hover title), the
label clear of the problem badge, and the minimap's viewport frame inside the minimap."""
import json

import pytest
from playwright.sync_api import expect

from designer.pipelines.models import Dataset
from tests.conftest import ROOT
from tests.e2e.helpers import drop_module, inside, node, open_designer, port
from tests.pipes import chain, pipeline
from tests.pipes import node as n

pytestmark = pytest.mark.browser


def disjoint(a, b):
    return a["x"] + a["width"] <= b["x"] or b["x"] + b["width"] <= a["x"] or a["y"] + a["height"] <= b["y"] or b["y"] + b["height"] <= a["y"]


def shown(text):
    """What an SVG text shows (its lines, without its hover title), lines joined by spaces."""
    return " ".join(text.locator("tspan").all_text_contents()).replace("\xa0", " ")


def name_of(page, nid, port_id):
    return page.locator(f'#canvas g[data-cell-id="{nid}"] g.x6-port:has([port="{port_id}"]) text.x6-port-label')


def digits(page, users):
    doc = json.loads((ROOT / "examples" / "digits.json").read_text())
    return open_designer(page, users["owner"], doc)


@pytest.mark.parametrize("width", [1440, 1024])
def test_port_names_are_drawn_apart_by_their_ports_and_clear_of_the_label_and_status(page, users, width):
    page.set_viewport_size({"width": width, "height": 900})
    digits(page, users)
    page.evaluate("designer.graph.zoomTo(1); designer.graph.centerCell(designer.graph.getCellById('train'))")
    body = node(page, "train").locator("rect").first.bounding_box()
    expected = {"in:untrained_model": "Untrained model", "in:training_dataset": "Training dataset",
                "in:validation_dataset": "Validation dataset"}
    boxes = {}
    for pid, text in expected.items():
        name = name_of(page, "train", pid)
        assert name.is_visible()
        assert shown(name) == text  # in one or two lines
        box = name.bounding_box()
        circle = port(page, "train", pid).bounding_box()
        cx = circle["x"] + circle["width"] / 2
        assert abs(box["x"] + box["width"] / 2 - cx) < 3, (pid, box, circle)  # centred under its circle
        assert box["y"] >= circle["y"] + circle["height"] / 2  # under the circle: inside the node
        assert inside(box, body), (pid, box, body)
        boxes[pid] = box
    names = list(boxes.values())
    assert all(disjoint(a, b) for i, a in enumerate(names) for b in names[i + 1:]), names
    label = node(page, "train").locator(".node-label")
    assert shown(label) == "Train PyTorch Model"
    assert all(disjoint(b, label.bounding_box()) for b in names)
    out = name_of(page, "train", "out:trained_model")
    assert shown(out) == "Trained model" and out.is_visible() and inside(out.bounding_box(), body)
    assert all(disjoint(out.bounding_box(), b) for b in names)
    # a problem's badge goes on the label's line, clear of the input ports' names and of the label
    page.evaluate("""() => { const n = designer.graph.getCellById('train');
                              n.setData({ ...n.getData(), parameters: { ...n.getData().parameters, bogus: 1 } }, { overwrite: true }); }""")
    badge = node(page, "train").locator(".node-badge")
    expect(badge).to_have_text("⚠ 1")
    page.wait_for_function("document.querySelector('#canvas [data-cell-id=train] .node-label').textContent.length > 0")
    assert inside(badge.bounding_box(), body) and all(disjoint(badge.bounding_box(), b) for b in names), (badge.bounding_box(), names)
    assert disjoint(badge.bounding_box(), label.bounding_box()), (badge.bounding_box(), label.bounding_box())
    page.shot(f"train-node-{width}")


def badged_dataset_node(page, users, name):
    """A Dataset node "data" on dataset `name`, with a parameter the module does not have: a problem
    the server names, drawn as a badge on the node (zoomed to 1.5): the badge."""
    ds = Dataset.objects.create(owner=users["owner"], name=name, size=100, file=f"datasets/{users['owner'].id}/{name}/{name}.zip")
    open_designer(page, users["owner"], pipeline([n("data", "dataset", dataset=ds.id, bogus=1)], []))
    page.evaluate("designer.graph.zoomTo(1.5); designer.graph.centerCell(designer.graph.getCellById('data'))")
    badge = node(page, "data").locator(".node-badge")
    expect(badge).to_have_text("⚠ 1")
    return badge


def fix_the_problem(page):
    """Node "data" without its unknown parameter: no problem left."""
    page.evaluate("""() => { const n = designer.graph.getCellById('data'); const { bogus, ...rest } = n.getData().parameters;
                              n.setData({ ...n.getData(), parameters: rest }, { overwrite: true }); }""")


def test_a_long_label_leaves_room_for_the_problem_badge(page, users):
    name = "handwritten-digits"  # "Dataset: handwritten-digits" fits the node's line, not beside the badge
    badge = badged_dataset_node(page, users, name)
    label = node(page, "data").locator(".node-label")
    body = node(page, "data").locator("rect").first.bounding_box()
    assert shown(label).startswith("Dataset: hand") and shown(label).endswith("…")
    assert node(page, "data").locator(".node-label-tip > title").text_content() == f"Dataset: {name}"  # the whole label on hover
    narrow = label.bounding_box()
    assert disjoint(narrow, badge.bounding_box()), (narrow, badge.bounding_box())
    assert inside(narrow, body) and inside(badge.bounding_box(), body)
    page.shot("badge-and-label")
    # the problem fixed: the badge goes, and the label takes the room back
    fix_the_problem(page)
    expect(badge).to_be_hidden()
    page.wait_for_function("document.querySelector('#canvas [data-cell-id=data] .node-label').getBBox().width > %f" % (narrow["width"] / 1.5 * 1.1))  # at zoom 1.5
    wide = label.bounding_box()
    assert inside(wide, body) and wide["width"] > narrow["width"] + 20 and shown(label) == f"Dataset: {name}", (wide, shown(label))
    page.shot("label-without-badge")


def test_a_name_longer_than_the_node_takes_a_second_line_under_the_badges_line(page, users):
    """Issue 30: a node naming its dataset or model cut the name ("Registered model: Photos-...").
    Past the node's width the label takes a second line, cut only past it; the badge stays on the
    first line, clear of both; the node is as tall with the badge as without."""
    long = "handwritten-digits-scanned-at-full-resolution-2026"
    badge = badged_dataset_node(page, users, long)
    lines = node(page, "data").locator(".node-label tspan")
    expect(lines).to_have_count(2)
    first_line, second_line = (t.replace("\xa0", " ") for t in lines.all_text_contents())
    assert first_line == "Dataset:" and second_line.startswith("handwritten-digits-scanned") and second_line.endswith("…")
    body = node(page, "data").locator("rect").first.bounding_box()
    first, second = lines.nth(0).bounding_box(), lines.nth(1).bounding_box()
    assert second["y"] - first["y"] == pytest.approx(16 * 1.5, abs=1), (first, second)  # one under the other, 16 px apart at zoom 1.5
    for box in (first, second, badge.bounding_box()):
        assert inside(box, body), (box, body)
    assert disjoint(first, badge.bounding_box()) and disjoint(second, badge.bounding_box()), (first, second, badge.bounding_box())
    height = page.evaluate("designer.graph.getCellById('data').getSize().height")
    page.shot("two-line-label-and-badge")
    fix_the_problem(page)
    expect(badge).to_be_hidden()
    expect(lines).to_have_count(2)
    assert page.evaluate("designer.graph.getCellById('data').getSize().height") == height  # nothing jumps as problems come and go


def frame_and_map(page):
    return page.locator(".x6-widget-minimap-viewport").bounding_box(), page.locator("#minimap").bounding_box()


def test_the_minimap_frame_stays_inside_the_minimap(page, users):
    open_designer(page, users["owner"])  # empty: nothing to map, no frame (X6 drew it 800 px wide)
    expect(page.locator(".x6-widget-minimap-viewport")).to_be_hidden()
    page.shot("empty-minimap")
    drop_module(page, "Toy source", 300, 200)  # something to map: the frame is back, inside the map
    expect(page.locator(".x6-widget-minimap-viewport")).to_be_visible()
    frame, box = frame_and_map(page)
    assert inside(frame, box), (frame, box)
    # a pipeline, zoomed in and panned far off: the frame is clamped to the minimap
    open_designer(page, users["owner"], chain(4), name="q")
    for scale, dx, dy in [(1, 0, 0), (3, 0, 0), (0.2, 0, 0), (2, -3000, -2000), (0.5, 4000, 3000)]:
        page.evaluate(f"designer.graph.zoomTo({scale}); designer.graph.translateBy({dx}, {dy})")
        page.evaluate("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
        frame, box = frame_and_map(page)
        assert frame is not None and inside(frame, box), (scale, dx, dy, frame, box)
        page.shot(f"minimap-{scale}-{dx}")
