"""Issue 15: what the designer page shows around the canvas (the last run when a pipeline is opened)."""
import pytest

from designer.pipelines.models import Run
from tests.e2e.helpers import node, open_designer
from tests.pipes import two_branches

pytestmark = pytest.mark.browser


def wait_status(page, nid, wanted, timeout=30_000):
    page.wait_for_selector(f'#canvas g[data-cell-id="{nid}"] [data-status="{wanted}"]', timeout=timeout)


def test_a_pipeline_opened_from_the_list_shows_its_last_runs_statuses(page, users, shared_worker):
    p = open_designer(page, users["owner"], two_branches(fail_left=True))
    page.click("#submit")
    page.wait_for_selector("#run-banner[data-status=failed]", timeout=40_000)
    run = Run.objects.get()
    # opened again as the pipelines list links it: no ?run= in the address
    page.goto(f"{page.base}/pipelines/{p.id}/")
    page.wait_for_selector("html[data-designer-ready=true]")
    wait_status(page, "left", "failed")
    wait_status(page, "right", "completed")
    page.wait_for_selector(f"#run-banner[data-status=failed]:has-text('Run #{run.id}: failed')")
    assert node(page, "src").locator("[data-status]").get_attribute("data-status") == "completed"
    page.shot("last-run-on-open")


def test_the_copied_note_clears_by_itself(page, users):
    open_designer(page, users["owner"], two_branches())
    box = node(page, "src").bounding_box()
    page.mouse.click(box["x"] + 60, box["y"] + 15)
    page.keyboard.press("Control+a")
    page.keyboard.press("Control+c")
    page.wait_for_selector("#banner.info:has-text('Copied 4 module(s).')")
    page.shot("copied-note")
    page.wait_for_selector("#banner", state="hidden", timeout=15_000)
