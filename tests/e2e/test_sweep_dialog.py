"""The Sweep dialog: a sweep of the pipeline's parameters written in the form or as YAML (the two
tabs carry one config), the server's problems next to the fields they name, and a good sweep
accepted (201) and opened on its page."""
import pytest

from designer.pipelines.models import Pipeline, Sweep
from tests.conftest import ROOT
from tests.e2e.conftest import sign_in
from tests.e2e.helpers import open_designer
from tests.pipes import node as n
from tests.pipes import pipeline

pytestmark = pytest.mark.browser


def tuning_pipeline():
    doc = pipeline([{**n("tune", "toy_tuning", learning_rate=0.01, batch_size=16),
                     "bindings": {"learning_rate": "learning_rate", "batch_size": "batch_size"}}], [])
    doc["parameters"] = [{"name": "learning_rate", "type": "float", "default": 0.01, "min": 1e-06, "max": 1.0, "help": ""},
                         {"name": "batch_size", "type": "int", "default": 16, "min": 1, "max": 1024, "help": ""}]
    return doc


def problem_at(page, key):
    return page.locator(f'#sweep-dialog [data-error-for="{key}"]')


def test_a_grid_sweep_is_written_refused_with_its_problems_at_their_fields_then_started(page, users):
    p = open_designer(page, users["owner"], tuning_pipeline())
    assert page.get_attribute("#sweep", "aria-disabled") == "false"
    page.click("#sweep")
    page.wait_for_selector("#sweep-dialog[open]")
    # the primary metric is one the pipeline's modules emit
    assert page.locator("#sw-primary_metric_name option").all_inner_texts() == ["score", "loss"]
    page.select_option("#sw-primary_metric_name", "score")
    page.select_option("#sw-sampling", "grid")
    # grid takes choice only: every swept row became a choice
    assert page.locator("#sw-row-0-expression option").all_inner_texts() == ["choice"]
    page.fill("#sw-row-0-values", "0.001, 0.01")
    page.fill("#sw-row-1-values", "16, 32")
    page.fill("#sw-max_total_runs", "4")
    page.fill("#sw-max_concurrent_runs", "0")
    page.select_option("#sw-policy-type", "BanditPolicy")
    assert page.input_value("#sw-policy-slack_factor") == "0.1"
    page.shot("grid-form")

    # the same config as YAML; edited there: a grid with a uniform expression
    page.click("#sweep-tab-yaml")
    text = page.input_value("#sweep-yaml")
    assert "sampling: grid" in text
    assert "- { name: batch_size, expression: choice, values: [ 16, 32 ] }" in text
    assert "max_concurrent_runs: 0" in text
    page.fill("#sweep-yaml", text.replace("{ name: learning_rate, expression: choice, values: [ 0.001, 0.01 ] }",
                                          "{ name: learning_rate, expression: uniform, values: [ 0.001, 0.1 ] }"))
    page.shot("yaml")
    # back to the form: the edit is there, and the form is what is sent
    page.click("#sweep-tab-form")
    assert page.input_value("#sw-row-0-expression") == "uniform"
    assert page.input_value("#sw-row-0-high") == "0.1"
    page.click("#sweep-submit")
    problem_at(page, "max_concurrent_runs").wait_for(state="visible")
    assert "max_concurrent_runs" in problem_at(page, "max_concurrent_runs").inner_text()
    row = problem_at(page, "row:learning_rate")
    assert "uniform" in row.inner_text() and "grid" in row.inner_text()
    assert page.locator('#sweep-dialog [data-sweep-field="row:batch_size"].invalid').count() == 0
    page.shot("problems")
    assert Sweep.objects.count() == 0

    # YAML that cannot be read stays in its tab, saying where
    page.click("#sweep-tab-yaml")
    page.fill("#sweep-yaml", "sampling: [grid\n")
    page.click("#sweep-tab-form")
    assert "line" in page.inner_text("#sweep-yaml-error")
    assert page.locator("#sweep-yaml-panel").is_visible()
    page.fill("#sweep-yaml", text.replace("max_concurrent_runs: 0", "max_concurrent_runs: 2"))
    page.click("#sweep-tab-form")

    # fixed: accepted, and the sweep's page opens
    page.wait_for_selector("#sweep-form-panel:not([hidden])")
    assert page.input_value("#sw-max_concurrent_runs") == "2"
    with page.expect_navigation():
        page.click("#sweep-submit")
    sweep = Sweep.objects.get()
    assert page.url.endswith(f"/sweeps/{sweep.id}/")
    assert sweep.pipeline_id == p.id
    assert sweep.config["sampling"] == "grid" and sweep.config["max_concurrent_runs"] == 2
    assert [s["values"] for s in sweep.config["parameter_space"]] == [[0.001, 0.01], [16, 32]]

    # back in the designer, the sweep's trials are runs of the pipeline: marked, with their values
    page.goto(f"{page.base}/pipelines/{p.id}/")
    page.wait_for_selector("html[data-designer-ready=true]")
    page.click("[data-tab=runs]")
    mark = page.locator("#tab-runs .trial-mark").first
    mark.wait_for()
    assert mark.inner_text().startswith(f"sweep #{sweep.id} · trial ")
    assert mark.get_attribute("href") == f"/sweeps/{sweep.id}/"
    assert "learning_rate=" in page.locator("#tab-runs .run-values").first.inner_text()
    page.shot("trial-runs")


def test_yaml_pasted_in_the_yaml_tab_is_what_is_sent(page, users):
    p = open_designer(page, users["owner"], tuning_pipeline())
    page.click("#sweep")
    page.click("#sweep-tab-yaml")
    page.fill("#sweep-yaml", "sampling: random\nparameter_space:\n  - name: learning_rate\n    expression: loguniform\n"
                             "    values: [-9, -2]\n  - name: nope\n    expression: choice\n    values: []\n"
                             "policy: {type: MedianStoppingPolicy, evaluation_interval: 1}\n"
                             "primary_metric_name: accuracy\nprimary_metric_goal: maximize\nmax_total_runs: 4\nmax_concurrent_runs: 2\n")
    page.click("#sweep-submit")
    top = page.locator("#sweep-dialog .dialog-problems li")
    top.first.wait_for()
    texts = " | ".join(top.all_inner_texts())
    assert "nope" in texts and "accuracy" in texts
    page.shot("yaml-problems")
    assert Sweep.objects.filter(pipeline=p).count() == 0
    # the same problems in the form land at their fields
    page.click("#sweep-tab-form")
    assert page.input_value("#sw-row-0-expression") == "loguniform"
    assert "e^-9 .. e^-2" in page.inner_text('[data-sweep-field="row:learning_rate"] .sw-hint')
    page.click("#sweep-submit")
    problem_at(page, "row:nope").wait_for(state="visible")
    problem_at(page, "primary_metric_name").wait_for(state="visible")
    page.shot("form-problems")
    page.set_viewport_size({"width": 1024, "height": 768})
    page.shot("form-problems-1024")
    assert page.evaluate("(d => d.scrollWidth <= d.clientWidth)(document.querySelector('#sweep-dialog .dialog-body'))")
    page.set_viewport_size({"width": 1440, "height": 900})
    # fixed in the form: the undeclared row unticked, a metric the module emits, and batch_size
    # (not swept) at a value of its own for every trial
    page.uncheck("#sw-row-1-swept")
    page.select_option("#sw-primary_metric_name", "score")
    assert page.input_value("#sw-row-2-fixed") == "16"
    page.fill("#sw-row-2-fixed", "64")
    page.shot("fixed-1440")
    with page.expect_navigation():
        page.click("#sweep-submit")
    sweep = Sweep.objects.get(pipeline=p)
    assert sweep.base_values == {"batch_size": 64}
    assert [s["name"] for s in sweep.config["parameter_space"]] == ["learning_rate"]


def test_cancel_closes_the_dialog_and_the_next_opening_starts_from_the_last_sweep_tried(page, users):
    open_designer(page, users["owner"], tuning_pipeline())
    page.click("#sweep")
    page.select_option("#sw-sampling", "bayesian")
    page.fill("#sw-max_total_runs", "0")
    page.click("#sweep-submit")
    problem_at(page, "max_total_runs").wait_for(state="visible")
    page.click("#sweep-cancel")
    page.wait_for_selector("#sweep-dialog", state="detached")
    page.click("#sweep")
    assert page.input_value("#sw-sampling") == "bayesian"
    assert page.input_value("#sw-max_total_runs") == "0"
    page.keyboard.press("Escape")
    page.wait_for_selector("#sweep-dialog", state="detached")


def test_the_dialogs_work_under_the_content_security_policy(browser, server, users, transactional_db):
    """No inline script or style, no eval: the yaml library's modules load when the dialog opens."""
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    sign_in(context, server, users["owner"])
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    p = Pipeline.objects.create(owner=users["owner"], name="p", draft=tuning_pipeline())
    page.goto(f"{server.url}/pipelines/{p.id}/")
    page.wait_for_selector("html[data-designer-ready=true]")
    page.click("#sweep")
    page.wait_for_selector("#sweep-dialog[open]")
    page.click("#sweep-tab-yaml")
    assert "sampling: random" in page.input_value("#sweep-yaml")
    page.click("#sweep-cancel")
    page.click("#submit")
    page.wait_for_selector("#run-dialog[open]")
    page.click("#run-dialog-cancel")
    page.wait_for_selector("#run-dialog", state="detached")
    context.close()
    assert not errors, errors


def test_the_originals_sweep_file_over_a_script_argument_is_pasted_typed_and_started_without_a_pipeline_parameter(page, users):
    """Issue 29: a HyperDrive file names the script's argument (`name: --learning_rate`). A pipeline of
    the example component alone, with no pipeline parameter: the Sweep button is on, the form lists
    the component's arguments typed from its parameters (unticked), the pasted file's argument is
    typed and swept, and the sweep starts as written."""
    doc = pipeline([n("script", "azureml_run_logging")], [])
    p = open_designer(page, users["owner"], doc)
    assert page.get_attribute("#sweep", "aria-disabled") == "false"
    page.click("#sweep")
    page.wait_for_selector("#sweep-dialog[open]")
    heads = page.locator("#sweep-dialog .sw-row-head label.check").all_inner_texts()
    assert [h.split() for h in heads] == [["--num_epochs", "int"], ["--learning_rate", "float"]], heads
    assert not page.is_checked("#sw-row-0-swept") and not page.is_checked("#sw-row-1-swept")
    assert "each module passes its own value" in page.inner_text("#sweep-form-panel")
    page.click("#sweep-tab-yaml")
    page.fill("#sweep-yaml", (ROOT / "examples" / "components" / "azureml_run_logging" / "hdconfig.yml").read_text())
    page.click("#sweep-tab-form")
    assert page.locator('[data-sweep-field="row:--learning_rate"] .sw-row-head').inner_text().split()[:2] == \
        ["--learning_rate", "float"]  # it said "not declared"
    assert page.input_value("#sw-row-0-expression") == "loguniform" and page.is_checked("#sw-row-0-swept")
    page.shot("script-argument-form")
    with page.expect_navigation():
        page.click("#sweep-submit")
    sweep = Sweep.objects.get(pipeline=p)
    assert [s["name"] for s in sweep.config["parameter_space"]] == ["--learning_rate"] and sweep.base_values == {}
