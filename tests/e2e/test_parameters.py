"""Pipeline parameters in the designer: declared in the Module tab (no module selected), a module
parameter bound to one (shown in its pane and on its node), Submit asking for their values (the
server's problems under the field they name), and the values in the runs list."""
import json

import pytest
from django.core.files.base import ContentFile

from designer.pipelines.models import Dataset, Run
from tests.conftest import ROOT
from tests.e2e.helpers import node, open_designer, saved
from tests.pipes import node as n
from tests.pipes import pipeline

pytestmark = pytest.mark.browser


def digits_draft(owner):
    """examples/digits.json on a dataset of the owner's (no worker runs it: a run stays queued)."""
    ds = Dataset(owner=owner, name="digits", size=4)
    ds.file.save("digits.zip", ContentFile(b"none"), save=True)
    doc = json.loads((ROOT / "examples" / "digits.json").read_text())
    for nd in doc["nodes"]:
        if nd["kind"] == "dataset":
            nd["parameters"]["dataset"] = ds.id
    return {**doc, "schema_version": 2, "parameters": []}


def select(page, nid):
    box = node(page, nid).bounding_box()
    page.mouse.click(box["x"] + 60, box["y"] + 15)
    page.wait_for_selector(f"#node-form[data-node={nid}]")


def blank(page):
    """Click the empty canvas: no module selected, the Module tab shows the pipeline's parameters."""
    page.locator("#canvas").focus()
    page.keyboard.press("Escape")
    box = page.locator("#canvas").bounding_box()
    page.mouse.click(box["x"] + 8, box["y"] + box["height"] - 8)
    page.wait_for_selector(".pipeline-params")


def test_a_parameter_is_declared_bound_and_given_a_value_at_submit(page, users):
    p = open_designer(page, users["owner"], digits_draft(users["owner"]))
    page.wait_for_selector(".pipeline-params >> text=No parameters yet.")
    page.click("#add-parameter")
    page.fill("#pp-0-name", "learning_rate")
    page.fill("#pp-0-default", "0.05")
    page.fill("#pp-0-min", "0.000001")
    page.fill("#pp-0-max", "1")
    page.fill("#pp-0-help", "SGD learning rate")
    page.locator("#pp-0-help").blur()
    draft = saved(page).draft
    assert draft["schema_version"] == 3  # stored as the current version (3: compute targets)
    assert draft["parameters"] == [{"name": "learning_rate", "type": "float", "default": 0.05, "min": 1e-06, "max": 1, "help": "SGD learning rate"}]
    # the Sweep button is live once a parameter is declared
    assert page.get_attribute("#sweep", "aria-disabled") == "false"

    # bind Learning rate of Train PyTorch Model to it: the menu offers it (a float), and a new one
    select(page, "train")
    page.click("[data-field=learning_rate] .bind-button")
    menu = page.locator("[data-field=learning_rate] .bind-menu")
    assert menu.locator("[data-to]").all_inner_texts()[0].startswith("learning_rate")
    assert menu.locator("[data-new]").get_attribute("data-new") == "learning_rate_2"
    page.shot("bind-menu")
    assert page.evaluate("(p => p.scrollWidth <= p.clientWidth)(document.querySelector('.pane'))"), "the menu widens the pane"
    menu.locator("[data-to=learning_rate]").focus()
    page.keyboard.press("ArrowDown")
    page.wait_for_selector("[data-field=learning_rate] [data-new]:focus")
    page.keyboard.press("ArrowDown")
    page.wait_for_selector("[data-field=learning_rate] [data-to=learning_rate]:focus")
    page.keyboard.press("Escape")
    page.wait_for_selector("[data-field=learning_rate] .bind-menu", state="detached")
    assert page.evaluate("document.activeElement.dataset.bind") == "learning_rate"
    page.click("[data-field=learning_rate] .bind-button")
    menu.locator("[data-to=learning_rate]").click()
    page.wait_for_selector("[data-field=learning_rate] .chip >> text=⟶ learning_rate")
    assert page.locator("#param-learning_rate").count() == 0  # the binding shows instead of the input
    # Epochs: bound to a new int parameter made from it (name, type, value and range prefilled),
    # from the keyboard: the menu opens on its first item; the arrows move, Enter picks
    page.focus("[data-field=epochs] .bind-button")
    page.keyboard.press("Enter")
    # (no int parameter yet: making one is the only item)
    page.wait_for_selector("[data-field=epochs] .bind-menu [data-new=epochs]:focus")
    page.keyboard.press("Enter")
    page.wait_for_selector("[data-field=epochs] .chip >> text=⟶ epochs")
    line = node(page, "train").locator("text").filter(has_text="@learning_rate")
    # "@name" for a parameter bound to its namesake; the tooltip (an SVG title) says it in full
    assert line.first.text_content().replace("\u00a0", " ").endswith("@learning_rate, @epochs")
    assert "learning_rate=@learning_rate, epochs=@epochs" in line.first.locator("title").text_content()
    # the taller node took room: the modules under it moved down, none covers another
    covered = page.evaluate("""() => { const b = designer.graph.getNodes().map(n => [n.id, n.getBBox()]); const out = [];
        for (const [i, a] of b.entries()) for (const c of b.slice(i + 1)) if (a[1].isIntersectWithRect(c[1])) out.push([a[0], c[0]]);
        return out; }""")
    assert covered == [], covered
    # Train's output port and Score's input port (10 px circles) are not drawn on one another
    gap = page.evaluate("designer.graph.getCellById('score').getBBox().y - designer.graph.getCellById('train').getBBox().bottom")
    assert gap >= 12, gap
    assert saved(page).draft["layout"]["score"]["y"] > 550  # (examples/digits.json: 110 px under Train)
    page.shot("bound")
    for width in (1440, 1024):  # the pane, the node's binding line and the toolbar at both widths
        page.set_viewport_size({"width": width, "height": 800})
        page.shot(f"bound-{width}")
    page.set_viewport_size({"width": 1400, "height": 900})
    draft = saved(page).draft
    train = next(n for n in draft["nodes"] if n["id"] == "train")
    assert train["bindings"] == {"learning_rate": "learning_rate", "epochs": "epochs"}
    assert draft["parameters"][1] == {"name": "epochs", "type": "int", "default": 5, "min": 1, "help": "passes over the training dataset"}
    assert page.locator("#problems.ok").count() == 1

    # a default out of the bound module parameter's range: the server names the binding
    blank(page)
    page.fill("#pp-1-default", "0")
    page.locator("#pp-1-default").blur()
    page.wait_for_selector("[data-name=epochs] .pp-problems li")
    assert "Epochs" in page.inner_text("[data-name=epochs] .pp-problems")
    assert node(page, "train").locator("[data-problems]").count() == 1
    page.shot("parameters-problem")
    page.set_viewport_size({"width": 1024, "height": 800})
    page.shot("parameters-problem-1024")
    page.set_viewport_size({"width": 1400, "height": 900})
    # the problem of the declaration alone, clicked below the canvas, leads to its card (the
    # details pane shown again if it was hidden)
    select(page, "score")
    page.click("#toggle-pane")
    page.locator("#details-pane").wait_for(state="hidden")
    page.click("#problems button:has-text(\"pipeline parameter 'epochs'\")")
    page.wait_for_selector("[data-name=epochs] #pp-1-name:focus")
    page.fill("#pp-1-default", "2")
    page.locator("#pp-1-default").blur()
    page.wait_for_selector("#problems.ok")

    # unbind Epochs in the pane: its input comes back with the node's own value
    select(page, "train")
    page.click("[data-unbind=epochs]")
    page.wait_for_selector("#param-epochs")
    assert page.input_value("#param-epochs") == "5"

    # Submit asks for the values; a bad one is refused by the server under its field
    page.click("#submit")
    dialog = page.locator("#run-dialog")
    dialog.wait_for()
    assert page.input_value("#run-param-0") == "0.05"
    assert "1e-06 .. 1" in dialog.locator("[data-field=learning_rate] .help").inner_text() or \
        "0.000001 .. 1" in dialog.locator("[data-field=learning_rate] .help").inner_text()
    page.fill("#run-param-0", "5")
    page.click("#run-dialog-submit")
    err = page.locator("#run-param-0-error")
    err.wait_for(state="visible")
    assert "learning_rate" in err.inner_text()
    page.shot("submit-refused")
    assert Run.objects.count() == 0
    page.fill("#run-param-0", "0.01")
    page.click("#run-dialog-submit")
    dialog.wait_for(state="detached")
    page.wait_for_selector("#run-banner:not([hidden])")
    run = Run.objects.get()
    assert run.parameter_values["learning_rate"] == 0.01
    page.click("[data-tab=runs]")
    cell = page.locator(f"#tab-runs tr[data-values-of='{run.id}'] .run-values")
    cell.wait_for()
    assert "learning_rate=0.01" in cell.inner_text()
    page.shot("runs-list")
    assert p.pk == run.pipeline_id


def test_a_pipeline_without_parameters_submits_at_once_and_cannot_sweep(page, users):
    open_designer(page, users["owner"], pipeline([n("src", "toy_source", value=3)], []))
    assert page.get_attribute("#sweep", "aria-disabled") == "true"
    assert "Declare a pipeline parameter first" in page.get_attribute("#sweep", "title")
    page.click("#sweep", force=True)  # aria-disabled: a click does nothing
    assert page.locator("#sweep-dialog").count() == 0
    page.click("#submit")
    page.wait_for_selector("#run-banner:not([hidden])")
    assert page.locator("#run-dialog").count() == 0
    assert Run.objects.get().parameter_values == {}


def test_a_binding_of_a_parameter_the_module_lacks_is_named_and_can_be_unbound(page, users):
    doc = pipeline([{**n("src", "toy_source", value=3), "bindings": {"gone": "x"}}], [])
    doc["parameters"] = [{"name": "x", "type": "int", "default": 1}]
    open_designer(page, users["owner"], doc)
    assert page.locator("#problems.bad").count() == 1
    select(page, "src")
    field = page.locator("[data-field=gone]")
    assert "has no parameter gone" in field.inner_text()
    assert "gone" in page.inner_text("#error-gone")  # the server's problem, under it
    page.click("[data-unbind=gone]")
    page.wait_for_selector("[data-field=gone]", state="detached")
    assert "bindings" not in saved(page).draft["nodes"][0]
    page.wait_for_selector("#problems.ok")


def test_a_renamed_parameter_keeps_its_bindings_and_a_removed_one_unbinds(page, users):
    doc = pipeline([{**n("src", "toy_source", value=3), "bindings": {"value": "v"}}], [])
    doc["parameters"] = [{"name": "v", "type": "int", "default": 4, "min": 0, "max": 10}]
    open_designer(page, users["owner"], doc)
    assert "bound by 1 module parameter" in page.inner_text("[data-name=v]")
    page.fill("#pp-0-name", "value")
    page.locator("#pp-0-name").blur()
    draft = saved(page).draft
    assert draft["parameters"][0]["name"] == "value" and draft["nodes"][0]["bindings"] == {"value": "value"}
    assert node(page, "src").locator("text").filter(has_text="@value").count() == 1
    page.click("[data-remove='0']")
    page.wait_for_selector(".pipeline-params >> text=No parameters yet.")
    draft = saved(page).draft
    assert draft["parameters"] == [] and "bindings" not in draft["nodes"][0]
    assert draft["nodes"][0]["parameters"]["value"] == 3  # the node keeps its own value
    assert node(page, "src").locator("text").filter(has_text="@value").count() == 0
    assert page.locator("#problems.ok").count() == 1
