"""The pipelines list in a real browser: create, open, rename, clone, delete, import."""
import json

import pytest

from designer.pipelines.models import Pipeline
from tests.pipes import chain, link, node, pipeline

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


def test_an_invalid_file_is_not_imported_and_every_problem_is_listed(page, users, tmp_path):
    bad = pipeline([node("a", "toy_source", value=5000), node("b", "no_such_module"), node("c", "toy_sink")],
                   [link("a", "c", dst_port="scores")])
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad))
    page.goto(page.base + "/")
    page.set_input_files("input[type=file]", str(path))
    page.click("#import")
    problems = page.locator("#import-problems")
    problems.wait_for()
    text = problems.inner_text()
    assert "nothing was imported" in text
    assert "out of range" in text and "no_such_module" in text and "ImageDirectory cannot feed ScoredDataset" in text
    assert not Pipeline.objects.exists()
    path.write_text("{not json")
    page.set_input_files("input[type=file]", str(path))
    page.click("#import")
    assert "not valid JSON" in page.locator("#import-problems").inner_text()
    page.shot("import-problems")

    good = tmp_path / "good.json"
    good.write_text(json.dumps(chain(3, name="three")))
    page.set_input_files("input[type=file]", str(good))
    page.click("#import")
    page.wait_for_url("**/pipelines/*/")
    p = Pipeline.objects.get()
    assert p.name == "three" and len(p.draft["nodes"]) == 3


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
