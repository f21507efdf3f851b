"""Issue 42, item 6: the layout defects, each measured on screen at 1440 and 1024 px. A walk through
the designer (examples/digits.json on a dataset, Auto-layout, a link wired by hand, modules dragged
over one another) logs no console warning; the view stays still when the problems bar changes
height; pane headings show labels; the run banner covers no module; a dropped link's menu stays over
the canvas; no link runs behind a module; an 8-class evaluation stays inside the pane."""
import json

import pytest

from designer.pipelines.models import Dataset, NodeRun, Run
from tests.conftest import ROOT
from tests.e2e.helpers import connect, drag, inside, node, open_designer, overlap, port, select
from tests.e2e.test_canvas_defects import PASSES_BEHIND

pytestmark = pytest.mark.browser

FRAMES = "new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))"  # X6 draws on animation frames
ROUTER_OF = """([src, dst]) => { const e = designer.graph.getEdges().find((x) => x.getSourceCellId() === src && x.getTargetCellId() === dst);
                                 const r = e && e.getRouter(); return r ? r.name : null; }"""


def digits_on_a_dataset(users):
    ds = Dataset.objects.create(owner=users["owner"], name="digits", size=100, file=f"datasets/{users['owner'].id}/digits/digits.zip")
    doc = json.loads((ROOT / "examples" / "digits.json").read_text())
    doc["nodes"][0]["parameters"]["dataset"] = ds.id
    return doc


def drag_over_and_back(page, nid, other):
    """Drag module `nid` by its title across module `other` (a frame drawn at each step), then back."""
    box, target = node(page, nid).bounding_box(), node(page, other).bounding_box()
    start = (box["x"] + 30, box["y"] + 20)
    page.mouse.move(*start)
    page.mouse.down()
    for x, y in [(target["x"] + 30, target["y"] + 20), (target["x"] + 60, target["y"] + 50), start]:
        page.mouse.move(x, y, steps=10)
        page.evaluate(FRAMES)
    page.mouse.up()
    page.evaluate(FRAMES)


@pytest.mark.parametrize("width", [1440, 1024])
def test_a_walk_through_the_designer_logs_no_console_warning(page, users, width):
    warnings = []
    page.on("console", lambda m: warnings.append(m.text) if m.type == "warning" else None)
    page.set_viewport_size({"width": width, "height": 900})
    doc = digits_on_a_dataset(users)
    doc["links"] = [link for link in doc["links"] if link["id"] != "l11"]  # Apply (validation) -> Score: wired by hand below
    open_designer(page, users["owner"], doc)
    page.click("#auto-layout")
    page.evaluate(FRAMES)
    connect(page, "apply_val", "transformed_image_directory", "score", "dataset")
    page.wait_for_function("designer.graph.getEdges().length === 12")
    # the new link would pass behind Train PyTorch Model: it is routed around it
    page.wait_for_function(f"({ROUTER_OF})(['apply_val', 'score']) === 'manhattan'")
    # a module dragged over the ends of routed links: there is no way around it for a moment
    for nid, other in [("train", "apply_val"), ("score", "train"), ("apply_val", "score")]:
        drag_over_and_back(page, nid, other)
    # every link is drawn from its output down to its input, inside the canvas
    area = page.locator("#canvas").bounding_box()
    for e in page.locator("#canvas g.x6-edge path:not([stroke=transparent])").all():
        box = e.bounding_box()
        assert box and box["height"] > 0 and box["y"] >= area["y"] - 1, box
    page.shot(f"walk-{width}")
    assert warnings == [], warnings


def boxes(page):
    return {nid: node(page, nid).bounding_box() for nid in page.evaluate("designer.graph.getNodes().map((n) => n.id)")}


@pytest.mark.parametrize("width", [1440, 1024])
def test_the_view_stays_still_when_the_problems_bar_changes_height(page, users, width):
    """A module selected partly out of view, a link wired elsewhere: the problems bar under the
    canvas changes height (a problem solved, then back with Undo), and no module moves on screen."""
    page.set_viewport_size({"width": width, "height": 900})
    doc = digits_on_a_dataset(users)
    doc["links"] = [link for link in doc["links"] if link["id"] != "l11"]
    open_designer(page, users["owner"], doc)
    page.wait_for_selector("#problems.bad >> text=1 problem(s)")
    select(page, "dataset")
    top = page.locator("#canvas").bounding_box()["y"]
    page.evaluate(f"designer.graph.translateBy(0, {top - node(page, 'dataset').bounding_box()['y'] - 20})")  # its top 20 px above the canvas
    page.evaluate(FRAMES)
    bar, still = page.locator("#problems").bounding_box()["height"], boxes(page)
    connect(page, "apply_val", "transformed_image_directory", "score", "dataset")
    page.wait_for_selector("#problems:not(.bad) >> text=No problems")
    page.evaluate(FRAMES)
    page.evaluate(FRAMES)
    assert page.locator("#problems").bounding_box()["height"] != bar
    assert moved(boxes(page), still) == []
    page.shot(f"wired-view-still-{width}")
    page.click("#undo")
    page.wait_for_selector("#problems.bad >> text=1 problem(s)")
    page.evaluate(FRAMES)
    page.evaluate(FRAMES)
    assert moved(boxes(page), still) == []
    page.shot(f"undone-view-still-{width}")


def moved(now, before):
    """The modules whose box on screen is not where it was (to a pixel)."""
    return [nid for nid, b in now.items() if any(abs(b[k] - before[nid][k]) > 1 for k in ("x", "y", "width", "height"))]


@pytest.mark.parametrize("width", [1440, 1024])
def test_the_pane_heading_names_a_module_by_its_label_and_by_its_id_only_beside_a_twin(page, users, width):
    """"Train PyTorch Model", not "Train PyTorch Model n8"; the two Apply Image Transformations of the
    digits example by their ids too. Each heading on one line or more, inside the pane."""
    page.set_viewport_size({"width": width, "height": 900})
    open_designer(page, users["owner"], digits_on_a_dataset(users))
    pane = page.locator("#details-pane").bounding_box()
    for nid, heading in [("train", "Train PyTorch Model"), ("apply_train", "Apply Image Transformation apply_train"),
                         ("apply_val", "Apply Image Transformation apply_val"), ("dataset", "Dataset")]:
        select(page, nid)
        h2 = page.locator("#node-form h2")
        assert " ".join(h2.inner_text().split()) == heading
        assert inside(h2.bounding_box(), pane), (h2.bounding_box(), pane)
        assert h2.evaluate("e => e.scrollWidth <= e.clientWidth")  # nothing cut off
        page.shot(f"heading-{nid}-{width}")


def under_the_banner(page):
    """The modules the run banner lies over, on screen."""
    banner = page.locator("#run-banner").bounding_box()
    return [nid for nid, b in boxes(page).items() if overlap(b, banner)]


COVERS_NONE = """() => { const r = document.querySelector('#run-banner').getBoundingClientRect();
    return [...document.querySelectorAll('#canvas g.x6-node')].every((g) => { const b = g.getBoundingClientRect();
      return b.bottom <= r.top || b.top >= r.bottom || b.right <= r.left || b.left >= r.right; }); }"""


@pytest.mark.parametrize("width", [1440, 1024])
def test_the_run_banner_covers_no_module_when_it_grows(page, users, width):
    """A run of the digits example just submitted, that waits for a worker: its banner (four lines
    at 1024 px, under a toolbar of two rows) lies over no module. Nor does the banner of the failed
    run the pipeline opens on, that says which module failed and why."""
    page.set_viewport_size({"width": width, "height": 768})
    doc = digits_on_a_dataset(users)
    p = open_designer(page, users["owner"], doc)
    page.click("#submit")
    page.wait_for_selector("#run-banner:has-text('queued')")
    page.wait_for_function(COVERS_NONE)
    page.evaluate(FRAMES)
    assert under_the_banner(page) == []
    page.shot(f"queued-run-banner-{width}")
    run = Run.objects.create(owner=users["owner"], pipeline=p, name="p", snapshot=doc, status="failed")
    for nd in doc["nodes"]:
        failed = nd["id"] == "train"
        NodeRun.objects.create(run=run, node_id=nd["id"], kind=nd["kind"], status="failed" if failed else "completed",
                               error="RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 15.78 GiB total capacity)" if failed else "")
    page.goto(f"{page.base}/pipelines/{p.id}/?run={run.id}")
    page.wait_for_selector("html[data-designer-ready=true]")
    page.wait_for_selector("#run-banner[data-status=failed]:has-text('CUDA out of memory')")
    page.wait_for_function(COVERS_NONE)
    page.evaluate(FRAMES)
    assert under_the_banner(page) == []
    page.shot(f"failed-run-banner-{width}")


@pytest.mark.parametrize("width", [1440, 1024])
def test_the_menu_of_a_link_dropped_by_the_canvas_edge_stays_over_the_canvas(page, users, width):
    """A link from ResNet dropped on the blank canvas by its right edge: the menu of what to add
    there lies over the canvas, clear of the details pane and whole (its list of choices too)."""
    page.set_viewport_size({"width": width, "height": 768})
    open_designer(page, users["owner"], digits_on_a_dataset(users))
    area = page.locator("#canvas").bounding_box()
    resnet = node(page, "resnet").bounding_box()
    drop = (area["x"] + area["width"] - 12, resnet["y"] + resnet["height"] + 60)
    drag(page, port(page, "resnet", "out:untrained_model"), drop)
    menu = page.locator("#quick-search")
    menu.wait_for()
    pane = page.locator("#details-pane").bounding_box()
    box = menu.bounding_box()
    page.shot(f"dropped-link-menu-{width}")
    assert inside(box, area), (box, area)
    assert not overlap(box, pane), (box, pane)
    assert inside(page.locator("#quick-search [role=listbox]").bounding_box(), box)
    page.keyboard.press("Escape")
    menu.wait_for(state="detached")


def eight_class_evaluation(folder):
    classes = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse"]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "_meta.yaml").write_text("type: EvaluationResults\n")
    matrix = [[100 + 11 * (i == j) * 50 + i + j for j in range(8)] for i in range(8)]
    (folder / "evaluation.json").write_text(json.dumps({"left": {
        "count": sum(map(sum, matrix)), "classes": classes, "overall": {"accuracy": 0.5},
        "per_class": [{"class": c, "precision": 0.5, "recall": 0.5, "f1": 0.5, "support": sum(matrix[i])} for i, c in enumerate(classes)],
        "confusion_matrix": matrix}}))
    return folder


@pytest.mark.parametrize("width", [1440, 1024])
def test_an_eight_class_confusion_matrix_stays_inside_the_pane(page, users, width):
    """Evaluate Model's Visualize with 8 classes of long names: the matrix lies inside the pane
    (scrolling sideways where it is wider), and so does everything else of the tab."""
    from django.conf import settings

    page.set_viewport_size({"width": width, "height": 900})
    doc = digits_on_a_dataset(users)
    p = open_designer(page, users["owner"], doc)
    run = Run.objects.create(owner=users["owner"], pipeline=p, name="p", snapshot=doc, status="completed")
    evaluation = eight_class_evaluation(settings.ARTIFACT_ROOT / f"eight-classes-{width}")
    NodeRun.objects.create(run=run, node_id="evaluate", kind="evaluate_model", status="completed", outputs={"evaluation_results": str(evaluation)})
    page.goto(f"{page.base}/pipelines/{p.id}/?run={run.id}")
    page.wait_for_selector('#canvas g[data-cell-id="evaluate"] [data-status="completed"]')
    select(page, "evaluate")
    page.click("[data-tab=visualize]")
    page.wait_for_selector("#tab-visualize .visualize[data-node=evaluate] table.confusion")
    pane = page.locator("#details-pane").bounding_box()
    scroller = page.locator("#tab-visualize .confusion-scroll")
    assert inside(scroller.bounding_box(), pane), (scroller.bounding_box(), pane)
    assert page.locator("#details-pane").evaluate("e => e.scrollWidth <= e.clientWidth + 1")  # the pane itself never scrolls sideways
    # each table, or the box it scrolls in, lies inside the pane
    for part in page.locator("#tab-visualize .evaluation > *").all():
        assert inside(part.bounding_box(), pane), (part.evaluate("e => e.className"), part.bounding_box(), pane)
    # the matrix's last column is there to scroll to
    scroller.evaluate("e => { e.scrollLeft = e.scrollWidth; }")
    last = page.locator("#tab-visualize table.confusion thead th").last
    assert last.inner_text() == "horse" and inside(last.bounding_box(), scroller.bounding_box())
    page.shot(f"eight-class-matrix-{width}")


@pytest.mark.parametrize("width", [1440, 1024])
def test_no_link_of_the_digits_example_runs_behind_a_module(page, users, width):
    """examples/digits.json as it opens: Score Image Model stands 22 px under Train PyTorch Model,
    too close for the router's margin, and the link from Apply (validation) to Score ran behind
    Train. It goes around Train; nor does any link run behind a module after Auto-layout."""
    page.set_viewport_size({"width": width, "height": 900})
    open_designer(page, users["owner"], digits_on_a_dataset(users))
    page.wait_for_function(f"({ROUTER_OF})(['apply_val', 'score']) === 'manhattan'")
    page.wait_for_function(f"({PASSES_BEHIND})().length === 0")
    train = node(page, "train").bounding_box()
    link = page.locator('#canvas g.x6-edge[data-cell-id="l11"] path').first.bounding_box()
    assert link["x"] + link["width"] > train["x"] + train["width"], (link, train)  # by Train's side
    page.shot(f"digits-as-opened-{width}")
    page.click("#auto-layout")
    page.evaluate(FRAMES)
    page.wait_for_function(f"({PASSES_BEHIND})().length === 0")
    page.shot(f"digits-auto-layout-{width}")
