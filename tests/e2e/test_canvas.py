"""The canvas in a real browser: palette, drag and drop, ports, refusals, editing commands."""
import pytest

from tests.e2e.helpers import connect, drop_module, links, node, open_designer, port, saved

pytestmark = pytest.mark.browser


def test_a_pipeline_is_built_by_drag_and_drop_and_bad_links_are_refused(page, users):
    open_designer(page, users["owner"])
    src = drop_module(page, "Toy source", 300, 80)
    add = drop_module(page, "Toy add", 300, 220)
    node(page, add).wait_for()
    connect(page, src, "out", add, "input")
    draft = saved(page).draft
    assert [(n["id"], n["kind"]) for n in draft["nodes"]] == [(src, "toy_source"), (add, "toy_add")]
    assert draft["nodes"][1]["parameters"] == {"amount": 1, "sleep": 0.0, "fail": False, "hold_file": ""}
    assert links(draft) == [(src, "out", add, "input")]
    assert set(draft["layout"]) == {src, add}
    page.shot("connected")

    sink = drop_module(page, "Toy sink", 300, 380)
    connect(page, add, "out", sink, "scores")
    msg = page.locator("#banner").inner_text()
    # said in the modules' and ports' labels and the types in words: no node id, no type name
    assert msg.startswith('Cannot connect Toy add\'s output "Out" to Toy sink\'s input "Scores": the output gives images '
                          "with a labels index, and Scores takes only a table of predictions."), msg
    page.shot("incompatible")
    add2 = drop_module(page, "Toy add", 600, 380)
    page.wait_for_selector("#banner", state="hidden")  # the next change is about something else: the refusal goes
    connect(page, add, "out", add2, "input")
    connect(page, add2, "out", add, "extra")
    assert "cycle" in page.locator("#banner").inner_text()
    stored = saved(page)
    assert links(stored.draft) == sorted([(src, "out", add, "input"), (add, "out", add2, "input")])
    # the sink's required input is not connected: the server says so, on the node and on the port
    assert page.locator(f'#canvas g[data-cell-id="{sink}"] [data-problems]').count() == 1
    assert "Toy sink: required input 'Scores' (a table of predictions) is not connected" in page.locator("#problems").inner_text()
    mark = port(page, sink, "in:scores")
    assert "required input" in mark.get_attribute("data-problem") and mark.get_attribute("stroke") == "#cf222e"
    assert port(page, add2, "in:extra").get_attribute("data-problem") is None  # optional: no mark
    page.shot("port-problem")


def test_the_palette_groups_the_catalogue_by_category(page, users):
    open_designer(page, users["owner"])
    catalogue = page.evaluate("fetch('/api/modules').then(r => r.json())")["modules"]
    expected = {}
    for m in catalogue:
        expected.setdefault(m["category"] or "Other", []).append(m["label"])
    shown = page.evaluate("""() => Object.fromEntries([...document.querySelectorAll('#palette-list details.category')].map(d =>
        [d.querySelector('summary').textContent.trim(), [...d.querySelectorAll('.palette-item')].map(b => b.textContent.trim())]))""")
    assert list(shown) == list(expected) and shown == expected
    assert len(shown) >= 3 and "Tests" in shown


def graph_ids(page):
    return sorted(page.evaluate("designer.graph.getNodes().map(n => n.id)"))


def boxes(page):
    """Each node's box on screen, as the user sees it."""
    return {nid: node(page, nid).locator("rect").first.bounding_box() for nid in graph_ids(page)}


def overlapping(page):
    b = boxes(page)
    ids = sorted(b)

    def meet(p, q):
        return p["x"] < q["x"] + q["width"] and q["x"] < p["x"] + p["width"] and p["y"] < q["y"] + q["height"] and q["y"] < p["y"] + p["height"]

    return [(i, j) for k, i in enumerate(ids) for j in ids[k + 1:] if meet(b[i], b[j])]


def assert_laid_out_along_the_links(page, chains):
    b = boxes(page)
    for ids in chains:  # each one below the one feeding it
        tops = [b[i]["y"] for i in ids]
        assert all(b[i]["y"] + b[i]["height"] < b[j]["y"] for i, j in zip(ids, ids[1:])), (ids, tops)
    assert overlapping(page) == []


def translate(page):
    return page.evaluate("(() => { const t = designer.graph.translate(); return [Math.round(t.tx), Math.round(t.ty)]; })()")


def outside_canvas(page):
    c = page.locator("#canvas").bounding_box()
    return [nid for nid, b in boxes(page).items()
            if b["x"] < c["x"] or b["y"] < c["y"] or b["x"] + b["width"] > c["x"] + c["width"] or b["y"] + b["height"] > c["y"] + c["height"]]


def test_select_move_delete_copy_paste_undo_redo_zoom_fit_and_layout(page, users):
    from tests.pipes import chain

    scrambled = chain(3)  # stored upside down (n2 on top), each node half over the next
    scrambled["layout"] = {"n0": {"x": 340, "y": 150}, "n1": {"x": 310, "y": 125}, "n2": {"x": 280, "y": 100}}
    open_designer(page, users["owner"], scrambled)
    assert graph_ids(page) == ["n0", "n1", "n2"]
    b = boxes(page)
    assert b["n2"]["y"] < b["n1"]["y"] < b["n0"]["y"]
    assert set(overlapping(page)) == {("n0", "n1"), ("n0", "n2"), ("n1", "n2")}
    page.shot("scrambled")
    page.click("#auto-layout")
    assert_laid_out_along_the_links(page, [["n0", "n1", "n2"]])
    page.shot("auto-layout")
    # palette search, and adding a module with the keyboard only
    page.fill("#palette-search", "sink")
    assert page.locator(".palette-item:visible").all_inner_texts() == ["Toy sink"]
    page.fill("#palette-search", "zzz")
    page.wait_for_selector("#palette-empty:visible")
    page.fill("#palette-search", "")  # cleared: every section again, the upload form of a user with no dataset too
    page.wait_for_selector("#upload-form:visible")
    page.fill("#palette-search", "zzz")
    page.fill("#palette-search", "toy add")
    page.locator(".palette-item:visible").focus()
    page.keyboard.press("Enter")
    assert graph_ids(page) == ["n0", "n1", "n2", "n3"]
    page.wait_for_selector("#node-form[data-node=n3]")
    # keyboard on the canvas: the new node is selected; arrows move it, Delete removes it
    before = page.evaluate("designer.graph.getCellById('n3').getPosition()")
    page.keyboard.press("ArrowRight")
    after = page.evaluate("designer.graph.getCellById('n3').getPosition()")
    assert after["x"] == before["x"] + 10
    page.keyboard.press("Delete")
    assert graph_ids(page) == ["n0", "n1", "n2"]
    page.keyboard.press("Control+z")
    assert graph_ids(page) == ["n0", "n1", "n2", "n3"]
    page.keyboard.press("Control+Shift+z")
    assert graph_ids(page) == ["n0", "n1", "n2"]
    # click to select, drag to move
    n1 = node(page, "n1")
    box = n1.bounding_box()
    start = page.evaluate("designer.graph.getCellById('n1').getPosition()")
    page.mouse.move(box["x"] + 60, box["y"] + 20)
    page.mouse.down()
    page.mouse.move(box["x"] + 160, box["y"] + 60, steps=8)
    page.mouse.up()
    moved = page.evaluate("designer.graph.getCellById('n1').getPosition()")
    assert moved != start
    # copy and paste n1 and n2 with their link (rubber band with shift-click adds to selection)
    page.keyboard.press("Control+a")
    page.keyboard.press("Control+c")
    page.keyboard.press("Control+v")
    assert len(graph_ids(page)) == 6
    draft = saved(page).draft
    assert len(draft["links"]) == 4 and len(draft["nodes"]) == 6
    page.click("#undo")
    assert graph_ids(page) == ["n0", "n1", "n2"]
    page.click("#redo")
    assert len(graph_ids(page)) == 6
    # zoom in until modules leave the canvas; Fit brings every one back inside
    page.click("#fit")
    assert outside_canvas(page) == []
    zoom = page.inner_text("#zoom-level")
    page.click("#zoom-in")
    assert page.inner_text("#zoom-level") == f"{int(zoom[:-1]) + 10}%"
    for _ in range(20):
        if outside_canvas(page):
            break
        page.click("#zoom-in")
    assert outside_canvas(page) != []
    page.shot("zoomed-in")
    page.click("#fit")
    assert outside_canvas(page) == []
    # pan: the wheel, and a right-button drag of the blank canvas, move the view
    c = page.locator("#canvas").bounding_box()
    blank = (c["x"] + 15, c["y"] + c["height"] - 15)
    start = translate(page)
    page.mouse.move(*blank)
    page.mouse.wheel(0, 120)
    page.wait_for_function(f"designer.graph.translate().ty !== {start[1]}")
    after_wheel = translate(page)
    page.mouse.move(*blank)
    page.mouse.down(button="right")
    page.mouse.move(blank[0] + 80, blank[1] - 60, steps=6)
    page.mouse.up(button="right")
    dragged = translate(page)
    assert abs(dragged[0] - after_wheel[0] - 80) <= 2 and abs(dragged[1] - after_wheel[1] + 60) <= 2, (after_wheel, dragged)
    # the minimap draws every module; a click on it centres the view on that spot
    assert page.locator("#minimap [data-cell-id]").count() == len(graph_ids(page))
    m = page.locator("#minimap .x6-graph").bounding_box()
    before, frame = translate(page), page.locator("#minimap .x6-widget-minimap-viewport").bounding_box()
    page.mouse.click(m["x"] + 3, m["y"] + m["height"] - 3)  # that corner of the pipeline comes to the centre
    assert translate(page) != before
    # the map's frame shows the new view (drawn again in the next task, and cut to the map's edges:
    # minimap.js), so it moves or changes size
    page.wait_for_function("(f) => { const b = document.querySelector('#minimap .x6-widget-minimap-viewport').getBoundingClientRect();"
                           " return Math.abs(b.x - f.x) + Math.abs(b.y - f.y) + Math.abs(b.width - f.width) + Math.abs(b.height - f.height) > 2; }",
                           arg=frame)
    page.shot("minimap-moved")
    # the pasted copies lie over the originals; auto-layout puts both chains top to bottom, apart
    assert overlapping(page) != []
    page.click("#auto-layout")
    pasted = sorted(set(graph_ids(page)) - {"n0", "n1", "n2"}, key=lambda i: int(i[1:]))
    assert_laid_out_along_the_links(page, [["n0", "n1", "n2"], pasted])
    assert outside_canvas(page) == []
    draft = saved(page).draft
    assert draft["layout"]["n0"]["y"] < draft["layout"]["n1"]["y"] < draft["layout"]["n2"]["y"]
    page.shot("after-layout")


def test_the_exported_file_imports_as_an_identical_pipeline_and_runs_headless(page, users, tmp_path):
    from designer.pipelines.models import Pipeline
    from tests.pipes import two_branches

    p = open_designer(page, users["owner"], two_branches(), name="branches")
    page.click("#auto-layout")
    saved(page)
    with page.expect_download() as dl:
        page.click("#export")
    exported = tmp_path / dl.value.suggested_filename
    dl.value.save_as(exported)
    assert exported.name == "branches.json"
    page.goto(page.base + "/")
    page.set_input_files("input[type=file]", str(exported))
    page.click("#import")
    page.wait_for_url("**/pipelines/*/")
    original, copy = Pipeline.objects.get(pk=p.pk), Pipeline.objects.exclude(pk=p.pk).get()
    assert copy.name == "branches"
    assert {k: v for k, v in copy.draft.items() if k != "name"} == {k: v for k, v in original.draft.items() if k != "name"}

    # and the downloaded file runs headless, as it is
    from io import StringIO

    from django.core.management import call_command

    from designer.pipelines.models import Run

    out = StringIO()
    call_command("run_pipeline", str(exported), "--inline", "--owner", "owner", "--timeout", "60", stdout=out)
    run = Run.objects.get()
    assert run.status == "completed" and f"run {run.id} completed" in out.getvalue(), out.getvalue()
    assert sorted(run.nodes.values_list("node_id", "status")) == [(nid, "completed") for nid in ("left", "left2", "right", "src")]
    # it is a run of the saved pipeline of that name (the copy, saved last): the address it prints
    # opens it on the canvas, and that pipeline's Runs tab and the Pipelines page link it
    address = out.getvalue().splitlines()[-1].removeprefix("open it at http://localhost:8000")
    assert run.pipeline == copy and address == f"/pipelines/{copy.id}/?run={run.id}", out.getvalue()
    page.goto(page.base + address)
    page.wait_for_selector(f"#run-banner[data-status=completed]:has-text('Run #{run.id}')")
    page.click("[data-tab=runs]")
    page.wait_for_selector(f"#tab-runs tr[data-run='{run.id}']")
    page.shot("headless-run-opened")
    page.goto(page.base + "/")
    assert page.get_attribute(f"#recent-runs tr[data-run='{run.id}'] a", "href") == address


def test_a_narrow_window_starts_with_the_minimap_hidden_and_the_users_choice_is_kept(page, users):
    """At 1024 px the canvas is half the window: the map would lie over modules. Shown on request
    (drawing every module, at its size), it stays shown after a reload; at 1400 px it starts shown."""
    from tests.pipes import two_branches

    page.set_viewport_size({"width": 1024, "height": 700})
    p = open_designer(page, users["owner"], two_branches())
    assert page.locator("#minimap").is_hidden() and page.inner_text("#toggle-minimap") == "Show map"
    page.click("#toggle-minimap")
    page.wait_for_function("document.querySelectorAll('#minimap [data-cell-id]').length === 4")
    m, canvas = page.locator("#minimap").bounding_box(), page.locator("#canvas").bounding_box()
    assert (round(m["width"]), round(m["height"])) == (152, 107)  # 150 x 105 inside its border
    assert m["x"] + m["width"] <= canvas["x"] + canvas["width"] and m["y"] + m["height"] <= canvas["y"] + canvas["height"]
    assert page.locator("#minimap .x6-widget-minimap-viewport").is_visible()  # the view's frame, drawn once shown
    page.shot("map-shown-1024")
    page.reload()
    page.wait_for_selector("html[data-designer-ready=true]")
    assert page.locator("#minimap").is_visible() and page.get_attribute("#toggle-minimap", "aria-expanded") == "true"
    page.click("#toggle-minimap")
    assert page.locator("#minimap").is_hidden()
    page.shot("map-hidden-1024")

    page.evaluate("localStorage.clear()")
    page.set_viewport_size({"width": 1400, "height": 900})
    page.goto(f"{page.base}/pipelines/{p.id}/")
    page.wait_for_selector("html[data-designer-ready=true]")
    assert page.locator("#minimap").is_visible() and page.inner_text("#toggle-minimap") == "Hide map"
