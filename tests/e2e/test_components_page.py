"""The components page in the browser: a user with the permission uploads a folder (the folder
input, with each file's path) and a zip, sees both versions listed with their command, ports and
parameters, and a bad component file refused by file, field and reason, the message kept in
view; a user without the permission sees no form but who can grant it; the top navigation links
the page."""
from __future__ import annotations

import zipfile

import pytest
import yaml
from django.contrib.auth.models import Permission

from tests.e2e.conftest import shot_dir, sign_in
from tests.e2e.test_registry_pages import both_widths

pytestmark = [pytest.mark.browser, pytest.mark.timeout(120)]

COMMAND = "python train.py --data {inputs.data} --epochs {params.epochs} --output_dir {outputs.model}"


def component_yaml(version=1, **changes) -> str:
    d = {"kind": "my_train", "label": "My Train", "category": "My components", "version": version,
         "description": "Trains on a folder of images.", "distributed": True, "command": COMMAND,
         "inputs": {"data": {"type": "ImageDirectory", "label": "Training data"},
                    "extra": {"type": "folder", "label": "Extra files", "optional": True}},
         "outputs": {"model": {"type": "ModelDirectory", "label": "Trained model"}},
         "params": {"epochs": {"type": "int", "default": 3, "min": 1, "max": 100, "help": "passes over the data"},
                    "optimizer": {"type": "choice", "choices": ["sgd", "adam"], "default": "sgd"}}}
    d.update(changes)
    return yaml.safe_dump(d, sort_keys=False)


def write_folder(root, version=1, **changes):
    folder = root / "my_train"
    (folder / "lib").mkdir(parents=True)
    (folder / "component.yaml").write_text(component_yaml(version, **changes))
    (folder / "train.py").write_text("print('training')\n")
    (folder / "lib" / "util.py").write_text("X = 1\n")
    (folder / "__pycache__").mkdir()
    (folder / "__pycache__" / "util.cpython-311.pyc").write_bytes(b"\0cache")  # left out by the page
    return folder


def write_zip(path, version, **changes):
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("my_train/component.yaml", component_yaml(version, **changes))
        z.writestr("my_train/train.py", "print('training')\n")
    return path


def grant(user):
    user.user_permissions.add(Permission.objects.get(content_type__app_label="pipelines", codename="add_component"))


def send(page, selector, path):
    page.set_input_files(selector, str(path))
    page.click("#upload-button")
    page.wait_for_selector("#upload-result:not(:empty)")
    result = page.locator("#upload-result")
    page.wait_for_function("document.querySelector('#upload-button').disabled === false")
    return result


def test_a_user_with_the_permission_uploads_a_folder_and_a_zip_and_sees_them_listed(page, users, request, tmp_path):
    grant(users["owner"])
    page.goto(f"{page.base}/")
    page.locator("header.topbar a", has_text="Components").click()
    page.wait_for_selector("html[data-components-loaded]")
    assert page.locator("#no-components").is_visible() and page.locator("#no-permission").count() == 0

    result = send(page, "#upload-folder", write_folder(tmp_path / "v1"))
    assert result.inner_text() == "Added My Train (my_train) version 1." and "done" in result.get_attribute("class")
    card = page.locator("section.component[data-kind=my_train]")
    card.wait_for()
    assert "My Train" in card.locator("h2").inner_text() and "1 version" in card.inner_text()
    v1 = card.locator(".component-version[data-version='1']")
    assert v1.locator("pre.command").inner_text() == COMMAND
    assert v1.locator("ul.inputs li").all_inner_texts() == ["Training data ImageDirectory", "Extra files AnyDirectory optional"]
    assert v1.locator("ul.outputs li").all_inner_texts() == ["Trained model ModelDirectory"]
    assert v1.locator("table.params tr[data-param=epochs] td").all_inner_texts()[1:4] == ["int", "3", "≥ 1, ≤ 100"]
    assert v1.locator("table.params tr[data-param=optimizer] td").nth(3).inner_text() == "sgd | adam"
    assert "distributed" in v1.inner_text()

    # a bad file: refused by file, field and reason, and the message stays
    bad = write_zip(tmp_path / "bad.zip", 2, params={"epochs": {"type": "int", "default": 0, "min": 1}})
    result = send(page, "#upload-file", bad)
    assert "error" in result.get_attribute("class")
    text = result.inner_text()
    assert text.startswith("Not added: my_train/component.yaml: params.epochs.default: ") and "tmp" not in text, text
    assert result.is_visible() and page.locator(".component-version").count() == 1
    page.shot("refused")

    result = send(page, "#upload-file", write_zip(tmp_path / "v2.zip", 2, description="Second try."))
    assert result.inner_text() == "Added My Train (my_train) version 2."
    page.wait_for_selector("section.component[data-kind=my_train] .component-version[data-version='2']")
    assert [v.get_attribute("data-version") for v in card.locator(".component-version").all()] == ["2", "1"]
    assert card.locator(".component-version[data-version='1'] pre.command").is_hidden()  # older versions folded
    card.locator(".component-version[data-version='1'] > summary").click()
    assert card.locator(".component-version[data-version='1'] pre.command").inner_text() == COMMAND
    assert "latest 2" in card.inner_text() and "Second try." in card.inner_text()

    site = page.locator("#site-components").inner_text()
    assert "settings folders" in site and "PyTorch Train (script)" in site
    both_widths(page, request, "components")


def test_a_user_without_the_permission_sees_no_form_but_who_grants_it(browser, server, users, transactional_db, request):
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    sign_in(context, server, users["collaborator"])
    other = context.new_page()
    other.goto(f"{server.url}/components/")
    other.wait_for_selector("html[data-components-loaded]")
    assert other.locator("#component-upload").count() == 0 and other.locator("input[type=file]").count() == 0
    note = other.locator("#no-permission").inner_text()
    assert "“Can add component”" in note and "administrator" in note and "admin" in note
    assert other.locator("#no-components").is_visible()
    other.screenshot(path=str(shot_dir(request) / "no-permission.png"), full_page=True)
    context.close()
