"""Datasets in the palette: upload an archive from the page (with a progress bar), refuse a
non-archive with the server's reason, and drop the uploaded dataset onto the canvas."""
import os
import zipfile

import pytest

from designer.pipelines.models import Dataset
from tests.e2e.conftest import UPLOAD_LIMIT_MB
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


def archive_of(path, megabytes: float):
    """A zip of one incompressible file (stored), of about `megabytes`."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as z:
        z.writestr("0/noise.png", os.urandom(int(megabytes * 2**20)))
    return path


def test_an_oversized_upload_is_refused_by_the_page_and_by_the_server(page, users, tmp_path):
    open_designer(page, users["owner"])
    big = archive_of(tmp_path / "big.zip", UPLOAD_LIMIT_MB + 1)
    sent = []
    page.on("request", lambda r: sent.append(r.method) if r.url.endswith("/api/datasets") else None)
    page.set_input_files("#upload-file", str(big))
    page.click("#upload")
    status = page.locator("#upload-status.error")
    status.wait_for()
    assert f"big.zip is 5.0 MB: larger than the upload limit of {UPLOAD_LIMIT_MB} MB. Nothing was uploaded." == status.inner_text()
    assert sent == []  # the page's own check: not a byte sent
    page.shot("too-large-page")
    # a page whose limit is out of date (the setting was lowered after it loaded): the server refuses
    page.evaluate("document.querySelector('#upload-form').dataset.max = String(2 ** 30)")
    with page.expect_response(lambda r: r.url.endswith("/api/datasets")) as answer:
        page.click("#upload")
    assert answer.value.status == 413
    page.wait_for_selector("#upload-status.error >> text=Not uploaded")
    assert f"the upload is 5.0 MB, larger than the limit of {UPLOAD_LIMIT_MB}.0 MB" in page.inner_text("#upload-status")
    assert page.locator("#upload-progress").is_hidden()
    page.shot("too-large-server")
    assert not Dataset.objects.exists()
    assert page.locator("#dataset-list .palette-item").count() == 0


def test_the_upload_progress_bar_moves_on_a_slow_network(page, users, tmp_path):
    open_designer(page, users["owner"])
    archive = archive_of(tmp_path / "slow.zip", 2)
    cdp = page.context.new_cdp_session(page)
    cdp.send("Network.enable")
    cdp.send("Network.emulateNetworkConditions", {"offline": False, "latency": 20, "downloadThroughput": -1,
                                                  "uploadThroughput": 512 * 1024})  # bytes per second: about 4 s
    page.evaluate("""() => {
        window.seenProgress = [];
        const bar = document.querySelector('#upload-progress');
        new MutationObserver(() => window.seenProgress.push(bar.value)).observe(bar, {attributes: true, attributeFilter: ['value']});
    }""")
    page.set_input_files("#upload-file", str(archive))
    page.click("#upload")
    page.wait_for_function("window.seenProgress.some(v => v > 0 && v < 100)")
    page.shot("progress")
    page.wait_for_selector("#upload-status >> text=Uploaded slow", timeout=30_000)
    seen = page.evaluate("window.seenProgress")
    between = sorted({v for v in seen if 0 < v < 100})
    assert len(between) >= 3, seen
    assert seen[-1] == 100 and seen == sorted(seen), seen
    assert Dataset.objects.get().name == "slow"
