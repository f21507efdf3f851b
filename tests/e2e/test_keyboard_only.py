"""The designer without a mouse: a pipeline built (quick search on the canvas), its parameters set
in the pane and submitted with the keyboard alone, not one pointer event on the page; and the "?"
list of the keyboard shortcuts, the same table that binds them."""
import pytest

from designer.pipelines.models import Pipeline, Run
from tests.e2e.component_pipes import digits_dataset
from tests.e2e.helpers import links, open_designer

pytestmark = pytest.mark.browser

POINTER_EVENTS = ["pointerdown", "pointerup", "pointermove", "mousedown", "mouseup", "mousemove", "dblclick",
                  "contextmenu", "wheel", "dragstart", "touchstart"]


def record_pointer_events(page):
    page.evaluate("""types => {
        window.pointerEvents = [];
        for (const t of types) document.addEventListener(t, (e) => window.pointerEvents.push(`${t} on ${e.target.id || e.target.tagName}`), true);
    }""", POINTER_EVENTS)


def active(page):
    return page.evaluate("document.activeElement.id")


def tab_to(page, element_id, key="Tab", limit=120):
    """Press Tab (or Shift+Tab) until the element has the focus."""
    for _ in range(limit):
        if active(page) == element_id:
            return
        page.keyboard.press(key)
    raise AssertionError(f"{key} never reached #{element_id} (the focus is on #{active(page)})")


def test_a_pipeline_is_built_set_and_submitted_with_the_keyboard_alone(page, users, tmp_path):
    owner = users["owner"]
    dataset_id = digits_dataset(tmp_path, owner)
    p = open_designer(page, owner)
    record_pointer_events(page)

    # Tab reaches the canvas; typing there searches the modules: the Dataset module, added mid-canvas
    tab_to(page, "canvas")
    page.keyboard.type("Dataset")
    page.wait_for_selector("#quick-search [aria-selected=true]:has-text('Dataset')")
    page.keyboard.press("Enter")
    (data,) = page.evaluate("designer.graph.getNodes().map(n => n.id)")
    page.wait_for_selector(f"#node-form[data-node={data}] #param-dataset")
    # its dataset chosen in the pane's picker
    tab_to(page, "param-dataset")
    page.keyboard.press("ArrowDown")
    page.wait_for_function(f"designer.graph.getCellById('{data}').getData().parameters.dataset === {dataset_id}")
    page.wait_for_selector(f'#canvas g[data-cell-id="{data}"] text:has-text("Dataset: digits")')
    page.shot("dataset-chosen")

    # back on the canvas (the Dataset node still selected): Convert to Image Directory, linked from it
    tab_to(page, "canvas", key="Shift+Tab")
    page.keyboard.type("convert")
    assert page.inner_text("#quick-search-note") == "links from Dataset: digits"
    page.wait_for_selector("#quick-search [aria-selected=true]:has-text('Convert to Image Directory')")
    page.keyboard.press("Enter")
    (convert,) = [i for i in page.evaluate("designer.graph.getNodes().map(n => n.id)") if i != data]
    page.wait_for_selector(f"#node-form[data-node={convert}]")
    tab_to(page, "param-max_expanded_mb")
    page.keyboard.press("Control+a")
    page.keyboard.type("64")
    page.wait_for_function(f"designer.graph.getCellById('{convert}').getData().parameters.max_expanded_mb === 64")
    page.wait_for_selector("#problems:has-text('No problems')")
    page.shot("built")
    # ] and [ walk the modules in reading order (the Dataset above its Convert): select one without a mouse
    tab_to(page, "canvas", key="Shift+Tab")
    page.keyboard.press("]")
    page.wait_for_selector(f"#node-form[data-node={data}]")  # Convert was selected: the next one goes round
    page.keyboard.press("]")
    page.wait_for_selector(f"#node-form[data-node={convert}]")
    page.keyboard.press("[")
    page.wait_for_selector(f"#node-form[data-node={data}]")
    assert page.locator("#canvas g.x6-node-selected").count() == 1

    # Submit, reached from the pane backwards
    tab_to(page, "submit", key="Shift+Tab")
    page.keyboard.press("Enter")
    page.wait_for_selector("#run-banner:has-text('Run #')")
    run = Run.objects.get()
    assert f"Run #{run.id}" in page.inner_text("#run-banner")
    page.shot("submitted")

    draft = Pipeline.objects.get(pk=p.pk).draft
    nodes = {d["id"]: d for d in draft["nodes"]}
    assert nodes[data]["kind"] == "dataset" and nodes[data]["parameters"]["dataset"] == dataset_id
    assert nodes[convert]["kind"] == "convert_to_image_directory" and nodes[convert]["parameters"]["max_expanded_mb"] == 64
    assert links(draft) == [(data, "dataset", convert, "input_dataset")]
    assert sorted(n["id"] for n in run.snapshot["nodes"]) == sorted([data, convert])
    assert page.evaluate("window.pointerEvents") == []
    # (the recorder hears a pointer event when there is one)
    page.evaluate("document.body.dispatchEvent(new PointerEvent('pointerdown'))")
    assert page.evaluate("window.pointerEvents") == ["pointerdown on BODY"]


def test_the_question_mark_lists_the_shortcuts_from_the_table_that_binds_them(page, users):
    open_designer(page, users["owner"])
    page.set_viewport_size({"width": 1024, "height": 700})
    page.locator("#canvas").focus()
    page.keyboard.press("?")
    dialog = page.locator("#shortcuts-dialog")
    dialog.wait_for()
    assert page.inner_text("#shortcuts-title") == "Keyboard shortcuts"
    # every entry of the table, with its keys as shown
    table = page.evaluate("""async () => {
        const src = document.querySelector('script[src$="js/main.js"]').src.replace('main.js', 'keymap.js');
        const k = await import(src);
        return k.SHORTCUTS.map((s) => [s.id, k.shownKeys(s), s.what]);
    }""")
    rows = dialog.locator("[data-shortcut]")
    assert rows.count() == len(table)
    for sid, keys, what in table:
        row = dialog.locator(f"[data-shortcut={sid}]")
        assert row.locator("kbd").all_inner_texts() == keys and row.locator("dd").inner_text() == what
    assert dialog.locator("[data-shortcut=undo] kbd").all_inner_texts() == ["Ctrl+Z"]
    assert dialog.locator("[data-shortcut=menu] kbd").all_inner_texts() == ["Shift+F10", "Menu key"]
    # the toolbar's buttons name the same keys
    titles = page.evaluate("['undo', 'redo', 'delete', 'fit'].map((id) => document.getElementById(id).title)")
    assert titles == ["Undo (Ctrl+Z)", "Redo (Ctrl+Shift+Z or Ctrl+Y)", "Delete the selection (Delete or Backspace)",
                      "Fit to screen (Ctrl+0)"]
    # in the window, nothing cut
    b = dialog.bounding_box()
    assert b["x"] >= 0 and b["y"] >= 0 and b["x"] + b["width"] <= 1024 and b["y"] + b["height"] <= 700
    body = dialog.locator(".dialog-body")
    assert body.evaluate("e => e.scrollWidth <= e.clientWidth")
    page.shot("shortcuts")
    # Escape closes it, the focus back where it was
    page.keyboard.press("Escape")
    dialog.wait_for(state="detached")
    assert active(page) == "canvas"

    # a "?" typed in a text field is text
    page.locator("#palette-search").focus()
    page.keyboard.press("?")
    assert page.input_value("#palette-search") == "?"
    assert dialog.count() == 0
    # the toolbar's button, and its Close
    button = page.locator("#shortcuts")
    assert button.get_attribute("title") == "Keyboard shortcuts (?)"
    button.focus()
    page.keyboard.press("Enter")
    dialog.wait_for()
    assert active(page) == "shortcuts-close"
    page.keyboard.press("Enter")
    dialog.wait_for(state="detached")
    assert active(page) == "shortcuts"


def test_the_pane_tabs_are_one_tab_stop_and_arrows_move_among_them(page, users):
    open_designer(page, users["owner"])
    record_pointer_events(page)
    tab_to(page, "tab-button-module")
    assert page.evaluate("[...document.querySelectorAll('[role=tab]')].map(b => b.tabIndex)") == [0, -1, -1, -1, -1]
    page.keyboard.press("ArrowRight")
    assert active(page) == "tab-button-runs"
    assert page.get_attribute("#tab-button-runs", "aria-selected") == "true" and page.is_visible("#tab-runs")
    page.keyboard.press("End")
    assert active(page) == "tab-button-visualize" and page.is_visible("#tab-visualize")
    page.keyboard.press("ArrowRight")  # round to the first
    assert active(page) == "tab-button-module" and page.is_hidden("#tab-visualize")
    page.keyboard.press("ArrowLeft")
    assert active(page) == "tab-button-visualize"
    assert page.get_attribute("#tab-visualize", "aria-labelledby") == "tab-button-visualize"
    assert page.evaluate("window.pointerEvents") == []
