"""Issue 15: what the designer page shows around the canvas (the last run when a pipeline is opened)."""
from pathlib import Path

import pytest
from django.conf import settings

from designer.pipelines.models import NodeRun, Run
from sdk.layout import DRIVER_LOG, LOG_DIR
from tests.e2e.helpers import node, open_designer, select
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


def test_the_run_banner_covers_no_module_of_a_tall_pipeline(page, users):
    """The banner shows after the canvas is fitted: the canvas is fitted again below it."""
    from tests.pipes import chain

    page.set_viewport_size({"width": 1024, "height": 700})
    doc = chain(8)
    p = open_designer(page, users["owner"], doc)
    run = Run.objects.create(owner=users["owner"], pipeline=p, name="p", snapshot=doc, status="completed")
    for nd in doc["nodes"]:
        NodeRun.objects.create(run=run, node_id=nd["id"], kind=nd["kind"], status="completed")
    page.goto(f"{page.base}/pipelines/{p.id}/")
    page.wait_for_selector(f"#run-banner[data-status=completed]:has-text('Run #{run.id}')")
    page.wait_for_function("document.querySelector('#run-banner').getBoundingClientRect().bottom <= "
                           "document.querySelector('#canvas g[data-cell-id=n0]').getBoundingClientRect().top")
    banner = page.locator("#run-banner").bounding_box()
    for nd in doc["nodes"]:
        box = node(page, nd["id"]).bounding_box()
        assert box["y"] >= banner["y"] + banner["height"] - 0.5, (nd["id"], box, banner)
    page.shot("banner-over-nothing")


def test_the_copied_note_clears_by_itself(page, users):
    open_designer(page, users["owner"], two_branches())
    box = node(page, "src").bounding_box()
    page.mouse.click(box["x"] + 60, box["y"] + 15)
    page.keyboard.press("Control+a")
    page.keyboard.press("Control+c")
    page.wait_for_selector("#banner.info:has-text('Copied 4 module(s).')")
    page.shot("copied-note")
    page.wait_for_selector("#banner", state="hidden", timeout=15_000)


def test_a_long_log_line_wraps_inside_the_pane_at_1440_and_1024(page, users, shared_worker):
    """Issue 15, defect 5: a log line of 2,000 characters without a space (a path, a tensor printed)
    wraps in the Outputs + logs pane instead of running past its right edge."""
    open_designer(page, users["owner"], two_branches())
    page.click("#submit")
    page.wait_for_selector("#run-banner[data-status=completed]", timeout=40_000)
    log = Path(settings.ARTIFACT_ROOT) / str(Run.objects.get().id) / "right" / LOG_DIR / DRIVER_LOG
    long_line = "/data/" + "x" * 2000 + "/end-of-the-long-line"
    with log.open("a") as f:  # as a module's own print would leave it
        f.write(long_line + "\n")
    for width in (1440, 1024):
        page.set_viewport_size({"width": width, "height": 900})
        select(page, "right")
        page.click("[data-tab=outputs]")
        page.wait_for_selector("#log-text:has-text('end-of-the-long-line')")
        box = page.locator("#log-text").bounding_box()
        pane = page.locator(".pane").bounding_box()
        assert box["x"] + box["width"] <= pane["x"] + pane["width"] + 1, (width, box, pane)
        assert page.evaluate("(() => { const p = document.querySelector('#log-text'); return p.scrollWidth - p.clientWidth; })()") <= 1
        assert page.evaluate("(() => { const p = document.querySelector('.pane'); return p.scrollWidth - p.clientWidth; })()") <= 1
        assert page.evaluate("document.documentElement.scrollWidth") <= width, "the page scrolls sideways"
        page.shot(f"long-log-line-{width}")
