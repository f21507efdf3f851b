"""Datasets in the palette: upload an archive from the page (with a progress bar), refuse a
non-archive with the server's reason, and drop the uploaded dataset onto the canvas."""
import zipfile

import pytest

from designer.pipelines.models import Dataset
from tests.e2e.helpers import drop_module, open_designer, saved

pytestmark = pytest.mark.browser


def test_a_dataset_is_uploaded_from_the_palette_and_dropped_on_the_canvas(page, users, tmp_path):
    open_designer(page, users["owner"])
    bad = tmp_path / "notes.txt"
    bad.write_text("not an archive")
    page.set_input_files("#upload-file", str(bad))
    page.click("#upload")
    page.wait_for_selector("#upload-status.error")
    assert "Not uploaded" in page.inner_text("#upload-status")
    assert not Dataset.objects.exists()

    archive = tmp_path / "digits.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("0/a.png", b"\x89PNG fake")
    page.set_input_files("#upload-file", str(archive))
    page.click("#upload")
    page.wait_for_selector("#upload-status >> text=Uploaded digits")
    assert page.locator("#upload-progress").get_attribute("value") == "100"
    ds = Dataset.objects.get()
    assert ds.owner == users["owner"] and ds.name == "digits"
    nid = drop_module(page, "digits", 300, 120)
    node = saved(page).draft["nodes"][0]
    assert node["id"] == nid and node["kind"] == "dataset" and node["parameters"]["dataset"] == ds.id
    assert "Dataset:\xa0digits" in page.locator(f'#canvas g[data-cell-id="{nid}"]').text_content()
