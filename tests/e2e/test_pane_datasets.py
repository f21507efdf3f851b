"""The Dataset module's pane offers the user's datasets by name (and size) in a picker, the
chosen one selected; the pipeline keeps the dataset's id. A chosen id that is none of the user's
is shown as not found, with what to do."""
import pytest

from designer.pipelines.models import Dataset
from tests.e2e.helpers import node, open_designer, saved
from tests.pipes import node as n
from tests.pipes import pipeline

pytestmark = pytest.mark.browser


def select(page, nid):
    box = node(page, nid).bounding_box()
    page.mouse.click(box["x"] + 60, box["y"] + 15)
    page.wait_for_selector(f"#node-form[data-node={nid}]")


def make(owner, name, size, version=1):
    return Dataset.objects.create(owner=owner, name=name, size=size, version=version,
                                  file=f"datasets/{owner.id}/{name}{version}/{name}.zip")


def test_the_dataset_is_picked_by_name_and_kept_as_its_id(page, users):
    digits = make(users["owner"], "digits", 2_400_000)
    cats = make(users["owner"], "cats and dogs", 512)
    make(users["stranger"], "not yours", 10)
    p = open_designer(page, users["owner"], pipeline([n("data", "dataset", dataset=digits.id)], []))
    select(page, "data")
    picker = page.locator("#param-dataset")
    assert picker.evaluate("e => e.tagName") == "SELECT"
    assert picker.locator("option").all_inner_texts() == ["Choose a dataset", "cats and dogs (512\xa0bytes)",
                                                         "digits (2.3\xa0MB)"]
    assert picker.input_value() == str(digits.id)
    assert page.inner_text("#error-dataset") == ""
    page.shot("picker")
    picker.select_option(label="cats and dogs (512\xa0bytes)")
    page.wait_for_selector(f"#save-state >> text=Saved · revision {p.revision + 1}")
    assert saved(page).draft["nodes"][0]["parameters"]["dataset"] == cats.id
    # the node's label on the canvas names the dataset now chosen
    page.wait_for_selector('#canvas g[data-cell-id="data"] text:has-text("Dataset: cats and dogs")')


def test_a_dataset_that_is_not_the_users_is_shown_as_not_found(page, users):
    make(users["owner"], "digits", 100)
    theirs = make(users["stranger"], "theirs", 10)
    open_designer(page, users["owner"], pipeline([n("data", "dataset", dataset=theirs.id)], []))
    select(page, "data")
    assert page.locator("#param-dataset option:checked").inner_text() == f"dataset #{theirs.id} (not found)"
    error = page.locator("#error-dataset")
    error.wait_for(state="visible")
    assert f"Dataset: you have no dataset with id {theirs.id}" in error.inner_text()
    assert page.locator("[data-field=dataset].invalid").count() == 1
    # known before submit: listed below the canvas and marked on the node, with nothing submitted
    page.wait_for_selector(f"#problems.bad >> text=you have no dataset with id {theirs.id}")
    assert node(page, "data").locator("[data-problems]").count() == 1
    page.shot("not-found")


def test_with_no_datasets_the_picker_says_where_to_upload_one(page, users):
    open_designer(page, users["owner"], pipeline([n("data", "dataset")], []))
    select(page, "data")
    assert page.locator("#param-dataset option").all_inner_texts() == ["No datasets yet: upload one (My datasets)"]


def test_the_stored_file_the_server_fills_in_is_not_in_the_pane(page, users):
    digits = make(users["owner"], "digits", 100)
    open_designer(page, users["owner"], pipeline([n("data", "dataset", dataset=digits.id)], []))
    select(page, "data")
    assert page.locator("#node-form [data-param]").evaluate_all("els => els.map(e => e.dataset.param)") == ["dataset"]
    assert page.locator("#node-form [data-bind]").count() == 1
    assert "upload one under My datasets in the palette" in page.inner_text("#help-dataset")


def test_a_dataset_with_versions_is_pinned_to_one_or_follows_its_latest(page, users):
    """Issue 42: each version is offered, and the name's latest; choosing the latest keeps the name
    in the pipeline (a submit reads the latest version then), with no problem, named on the canvas."""
    v1 = make(users["owner"], "digits", 100)
    make(users["owner"], "digits", 200, version=2)
    p = open_designer(page, users["owner"], pipeline([n("data", "dataset", dataset=v1.id)], []))
    select(page, "data")
    picker = page.locator("#param-dataset")
    assert picker.locator("option").all_inner_texts() == ["Choose a dataset", "digits: latest version (now v2)",
                                                         "digits v2 (200\xa0bytes)", "digits v1 (100\xa0bytes)"]
    assert picker.input_value() == str(v1.id)
    page.wait_for_selector('#canvas g[data-cell-id="data"] text:has-text("Dataset: digits v1")')
    picker.select_option(label="digits: latest version (now v2)")
    page.wait_for_selector(f"#save-state >> text=Saved · revision {p.revision + 1}")
    assert saved(page).draft["nodes"][0]["parameters"]["dataset"] == "digits"
    page.wait_for_selector('#canvas g[data-cell-id="data"] text:has-text("Dataset: digits (latest)")')
    page.wait_for_selector("#problems.ok")
    assert page.inner_text("#error-dataset") == ""
    page.shot("latest")
