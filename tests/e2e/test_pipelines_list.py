"""The pipelines list in a real browser: create, open, rename, clone, delete, import."""
import json

import pytest
from playwright.sync_api import expect

from designer.pipelines.models import Pipeline
from tests.conftest import ROOT
from tests.pipes import chain, node, pipeline

pytestmark = pytest.mark.browser


def test_an_owner_creates_renames_clones_and_deletes_a_pipeline(page, users):
    page.goto(page.base + "/")
    page.fill("input[name=name]", "Digits")
    page.click("#create")
    page.wait_for_url("**/pipelines/*/")
    p = Pipeline.objects.get(owner=users["owner"])
    assert p.name == "Digits" and p.draft["nodes"] == []
    page.click(".brand")
    row = page.locator(f"#pipeline-{p.id}")
    row.get_by_text("Rename").click()
    page.fill(f"#pipeline-{p.id} input[name=name]", "")
    page.keyboard.press("Enter")  # an empty name is refused by the browser (required)
    page.fill(f"#pipeline-{p.id} input[name=name]", "Digits v2")
    page.keyboard.press("Enter")
    page.wait_for_selector(f"#pipeline-{p.id} td.name >> text=Digits v2")
    assert Pipeline.objects.get(pk=p.pk).name == "Digits v2"
    page.locator(f"#pipeline-{p.id}").get_by_role("button", name="Clone").click()
    page.wait_for_selector("text=Cloned Digits v2 as Digits v2 (copy).")
    copy = Pipeline.objects.exclude(pk=p.pk).get()
    page.shot("list")
    page.locator(f"#pipeline-{copy.id}").get_by_text("Delete").click()
    page.wait_for_selector("#confirm-title >> text=Delete Digits v2 (copy)?")
    assert Pipeline.objects.filter(pk=copy.pk).exists()  # asking is not deleting
    page.click("#confirm-delete")
    page.wait_for_selector("text=Deleted Digits v2 (copy).")
    assert list(Pipeline.objects.values_list("name", flat=True)) == ["Digits v2"]
    page.locator(f"#pipeline-{p.id} td.name a").click()
    page.wait_for_selector("html[data-designer-ready=true]")


def test_the_shipped_example_imports_and_opens_with_what_is_left_to_fix(page, users, tmp_path):
    """examples/digits.json names the sample dataset "digits", which this user has not (a dataset
    is a user's own): it is imported all the same, as a draft, and the designer says what to fix; a
    file that cannot be read is not. (With the sample: tests/datasets/test_sample_datasets.py.)"""
    from designer.pipelines.models import Dataset

    digits = Dataset.objects.create(owner=users["owner"], name="my digits", size=100, file=f"datasets/{users['owner'].id}/digits/digits.zip")
    page.goto(page.base + "/")
    page.set_input_files("input[type=file]", str(ROOT / "examples" / "digits.json"))
    page.click("#import")
    page.wait_for_selector("html[data-designer-ready=true]")
    p = Pipeline.objects.get()
    assert len(p.draft["nodes"]) == 10
    warning = page.locator("#banner.warn")
    expect(warning).to_contain_text(f"Imported {p.name}, with 1 problem(s) to fix before it runs: they are listed below the canvas.")
    expect(page.locator("#problems")).to_contain_text("no dataset chosen")
    assert page.locator("ul.messages").count() == 0  # over the canvas, not above the page pushing it down
    page.shot("imported-with-a-problem")
    page.locator('#canvas g[data-cell-id="dataset"]').click()
    page.select_option("#param-dataset", str(digits.id))
    page.wait_for_selector("#problems.ok")
    expect(warning).to_be_hidden()  # it goes with the last problem

    page.goto(page.base + "/")
    path = tmp_path / "bad.json"
    path.write_text("{not json")
    page.set_input_files("input[type=file]", str(path))
    page.click("#import")
    assert "not valid JSON" in page.locator("#import-problems").inner_text()
    shape = tmp_path / "shape.json"
    shape.write_text(json.dumps(pipeline([node("..", "toy_source", value=1)], [])))
    page.set_input_files("input[type=file]", str(shape))
    page.click("#import")
    assert "cannot be an id" in page.locator("#import-problems").inner_text()
    page.shot("import-problems")
    assert Pipeline.objects.count() == 1

    good = tmp_path / "good.json"
    good.write_text(json.dumps(chain(3, name="three")))
    page.set_input_files("input[type=file]", str(good))
    page.click("#import")
    page.wait_for_url("**/pipelines/*/")
    p = Pipeline.objects.get(name="three")
    assert len(p.draft["nodes"]) == 3
    expect(page.locator("#banner.info")).to_contain_text("Imported three.")


def test_a_long_pipeline_name_wraps_and_its_actions_stay_on_screen(page, users):
    page.set_viewport_size({"width": 1280, "height": 800})
    p = Pipeline.objects.create(owner=users["owner"], name="digits_resnet18_finetuned" * 8, draft=chain(1))  # no space to wrap at
    page.goto(page.base + "/")
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280, "the page scrolls sideways"
    delete = page.locator(f"#pipeline-{p.id}").get_by_text("Delete").bounding_box()
    assert delete["x"] + delete["width"] <= 1280
    page.shot("long-name")


def test_sign_in_and_out(page, users):
    users["owner"].set_password("pw-owner")
    users["owner"].save()  # which also ends the session the fixture signed in with
    page.goto(page.base + "/")
    page.wait_for_url("**/accounts/login/?next=/")
    page.fill("input[name=username]", "owner")
    page.fill("input[name=password]", "wrong")
    page.keyboard.press("Enter")
    page.wait_for_selector("text=did not match")
    page.fill("input[name=password]", "pw-owner")
    page.keyboard.press("Enter")
    page.wait_for_selector("h1 >> text=Pipelines")
    page.click("text=Sign out")
    page.wait_for_url("**/accounts/login/")
    page.goto(page.base + "/")
    page.wait_for_url("**/accounts/login/?next=/")


def test_the_pipeline_is_renamed_in_the_designers_top_bar(page, users):
    from tests.e2e.helpers import open_designer, saved

    p = open_designer(page, users["owner"], chain(2), name="Untitled pipeline")
    page.click("#pipeline-name")
    page.fill("#pipeline-name-input", "Digits, second try")
    page.keyboard.press("Enter")
    page.wait_for_function("document.querySelector('#save-state').textContent === 'Saved · revision 2'")
    assert page.inner_text("#pipeline-name") == "Digits, second try" and page.title().startswith("Digits, second try")
    stored = saved(page)
    assert stored.name == "Digits, second try" and len(stored.draft["nodes"]) == 2  # the draft kept, its name new
    # Escape keeps the name; a name too long is refused, saying why, and the old one stays
    page.focus("#pipeline-name")
    page.keyboard.press("Enter")
    page.fill("#pipeline-name-input", "something else")
    page.keyboard.press("Escape")
    assert page.inner_text("#pipeline-name") == "Digits, second try"
    page.evaluate("() => { document.querySelector('#pipeline-name').click(); const i = document.querySelector('#pipeline-name-input'); "
                  "i.removeAttribute('maxlength'); i.value = 'x'.repeat(300); }")
    page.keyboard.press("Enter")
    expect(page.locator("#banner")).to_contain_text("Not renamed: a name may have at most 200 characters")
    page.wait_for_selector("#save-state >> text=Saved · revision 3")  # the draft saved again, without the name
    expect(page.locator("#pipeline-name")).to_have_text("Digits, second try")
    assert Pipeline.objects.get(pk=p.pk).name == "Digits, second try"
    page.shot("renamed")
