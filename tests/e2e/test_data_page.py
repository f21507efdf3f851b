"""Issue 42, item 3: the Data page, walked as a user coming from Azure ML studio would. The list
shows each dataset once (version, versions, type, size, classes, created on and by) and refuses
an archive over the upload limit before sending it; uploading
its name again from the page makes version 2, whose page shows its class counts, a preview that
loads, and its versions; version 1's lineage names the run that used it, and deleting version 1
is refused, naming that run. Nothing runs past the window or over another box at 1440 or 1024 px."""
import io
import os
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.template.defaultfilters import filesizeformat
from PIL import Image

from designer.pipelines.authoring import drafts
from designer.pipelines.datasets import service as datasets
from designer.pipelines.models import Dataset
from designer.pipelines.runs import service as runs
from tests.datasets.test_datasets_api import pets_pipeline
from tests.e2e.conftest import UPLOAD_LIMIT_MB

pytestmark = pytest.mark.browser


def pets_zip(classes=("cats", "dogs"), per_class=4) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for c, cls in enumerate(classes):
            for i in range(per_class):
                png = io.BytesIO()
                Image.new("RGB", (32, 24), (60 * c, 30 * i, 160)).save(png, "PNG")
                z.writestr(f"pets/{cls}/{i}.png", png.getvalue())
    return buf.getvalue()


def overlapping(page, selector) -> list:
    """Pairs of the boxes matched by `selector` that overlap (a preview's thumbnails, the facts)."""
    return page.evaluate("""sel => {
      const boxes = [...document.querySelectorAll(sel)].map((e) => e.getBoundingClientRect());
      const hits = [];
      boxes.forEach((a, i) => boxes.slice(i + 1).forEach((b, j) => {
        if (a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5) hits.push([i, i + 1 + j]);
      }));
      return hits;
    }""", selector)


def fits(page):
    assert page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth"), "scrolls sideways"
    assert overlapping(page, "main > section.card") == []


def test_the_data_page_story(page, users, tmp_path):
    owner = users["owner"]
    v1 = datasets.store(owner, "pets", SimpleUploadedFile("pets.zip", pets_zip()))
    p, _ = drafts.create(owner, "pets pipeline", pets_pipeline("pets"))
    run = runs.submit(owner, p.draft, pipeline=p, name="first try")  # queued: what it read is recorded at submit
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(page.base + "/data/")
    row = page.locator("#datasets tr[data-dataset=pets]")
    assert row.locator("td").all_inner_texts()[:6] == ["pets", "1", "1", "Zip archive", filesizeformat(v1.size), "2"]
    assert row.locator("td").nth(7).inner_text() == "owner"
    fits(page)
    page.shot("data-list")

    # an archive over the upload limit is refused before its bytes are sent
    big = tmp_path / "huge.zip"
    big.write_bytes(os.urandom((UPLOAD_LIMIT_MB + 1) * 2**20))
    page.wait_for_selector("html[data-data-page-ready]")
    page.set_input_files("#data-file", str(big))
    assert page.get_attribute("#data-name", "placeholder") == "huge"
    page.click("#data-upload-button")
    assert page.inner_text("#data-upload-status.error") == (f"huge.zip is {UPLOAD_LIMIT_MB + 1}.0 MB: larger than the upload "
                                                           f"limit of {UPLOAD_LIMIT_MB} MB. Nothing was uploaded.")
    assert page.url.endswith("/data/") and Dataset.objects.count() == 1
    fits(page)
    page.shot("too-large")

    # the same name again, from the page: version 2, and its page
    archive = tmp_path / "pets.zip"
    archive.write_bytes(pets_zip(classes=("birds", "cats", "dogs")))
    page.set_input_files("#data-file", str(archive))
    page.fill("#data-name", "pets")
    page.click("#data-upload-button")
    page.wait_for_url("**/data/pets/?version=2")
    assert page.inner_text(".messages") == "Uploaded pets version 2."
    assert page.text_content(".version-grid h3 >> nth=0") == "Version 2 · latest"
    counts = page.locator("#class-counts tbody tr")
    assert [r.split("\t")[:2] for r in counts.all_inner_texts()] == [["birds", "4"], ["cats", "4"], ["dogs", "4"]]
    images = page.locator("ul.preview-grid img")
    assert images.count() == 12
    page.wait_for_function("[...document.querySelectorAll('ul.preview-grid img')].every((i) => i.complete && i.naturalWidth > 0)")
    assert page.locator("ul.preview-grid figcaption").all_inner_texts()[:3] == ["birds", "cats", "dogs"]
    assert overlapping(page, "ul.preview-grid figure") == [] and overlapping(page, "#version-facts dt, #version-facts dd") == []
    assert page.locator("#version-list tbody tr").count() == 2 and page.locator("#no-runs").is_visible()
    fits(page)
    page.shot("version-2")

    # version 1: the run that used it, and a delete (asked once more) that is refused, naming it
    page.select_option("#version-select", "1")
    page.click("#show-version")
    page.wait_for_url("**/data/pets/?version=1")
    page.wait_for_selector("html[data-data-page-ready]")
    cells = page.locator("#lineage-runs tbody tr td").all_inner_texts()
    assert len(cells) == 4 and [cells[0], cells[1], cells[3]] == [str(run.id), "first try", "data"]
    assert page.get_attribute("#lineage-runs a", "href") == f"/pipelines/{p.id}/?run={run.id}"
    asked = []
    page.once("dialog", lambda d: (asked.append(d.message), d.accept()))
    page.click("#delete-version")
    page.wait_for_selector(".messages li.error")
    assert asked == ["Delete version 1 of pets and its archive? This cannot be undone."]
    assert page.inner_text(".messages li.error") == (f"Dataset 'pets' version 1 is not deleted: 1 run(s) used it "
                                                     f"(run {run.id} 'first try'): delete them first.")
    assert Dataset.objects.filter(pk=v1.pk).exists()
    fits(page)
    page.shot("delete-refused")

    page.set_viewport_size({"width": 1024, "height": 768})
    fits(page)
    page.shot("version-1-1024")
    page.goto(page.base + "/data/")
    fits(page)
    page.shot("data-list-1024")
