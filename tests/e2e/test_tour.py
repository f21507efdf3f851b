"""The README's tour, its first steps in the browser: after `make run`'s set-up (the sample dataset
`digits` added), examples/digits.json imported from the Pipelines page opens with no problem, its
Dataset module on `digits`; Train PyTorch Model selected shows, in the Module tab, its parameters
then its Run settings. Its screenshot is the README's picture: with `DOCS_IMAGES=1` the
test writes it to docs/img/canvas.png as well as to test-results/ (as docs/img/sweep.png was taken)."""
import io
import os

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from designer.pipelines.models import Pipeline
from tests.conftest import ROOT
from tests.e2e.helpers import node, select

pytestmark = pytest.mark.browser


def test_the_tours_pipeline_imports_from_the_pipelines_page_with_nothing_to_fix(page, users):
    call_command("add_sample_datasets", owner=users["owner"].username, stdout=io.StringIO())
    page.goto(page.base + "/")
    page.set_input_files("input[type=file]", str(ROOT / "examples" / "digits.json"))
    page.click("#import")
    page.wait_for_selector("html[data-designer-ready=true]")
    p = Pipeline.objects.get()
    expect(page.locator("#banner")).to_contain_text(f"Imported {p.name}.")
    expect(page.locator("#problems.ok")).to_be_visible()
    expect(node(page, "dataset")).to_contain_text("Dataset: digits")

    select(page, "train")
    expect(page.locator("#tab-button-module")).to_have_attribute("aria-selected", "true")
    legends = page.locator("#node-form[data-node=train] fieldset legend")
    expect(legends).to_have_text(["Parameters", "Run settings", "Comment"])  # under its parameters
    page.shot("canvas")
    if os.environ.get("DOCS_IMAGES") == "1":
        page.screenshot(path=str(ROOT / "docs" / "img" / "canvas.png"))
