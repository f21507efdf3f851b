"""Submitting from the page and watching the run live; runs list; cancel; outputs, logs, metrics."""
from pathlib import Path

import pytest

from designer.pipelines.models import Run
from tests.e2e.helpers import node, open_designer
from tests.pipes import two_branches

pytestmark = pytest.mark.browser


def status(page, nid):
    return node(page, nid).locator("[data-status]").get_attribute("data-status")


def wait_status(page, nid, wanted, timeout=30_000):
    page.wait_for_selector(f'#canvas g[data-cell-id="{nid}"] [data-status="{wanted}"]', timeout=timeout)


def select(page, nid):
    box = node(page, nid).bounding_box()
    page.mouse.click(box["x"] + 60, box["y"] + 15)


def test_a_submitted_run_shows_every_status_live_with_outputs_logs_and_metrics(page, users, shared_worker):
    open_designer(page, users["owner"], two_branches(fail_left=True, sleep=1.0))
    page.click("#submit")
    wait_status(page, "left", "running")  # seen while it runs, through the websocket
    page.shot("running")
    wait_status(page, "left", "failed")
    wait_status(page, "right", "completed")
    wait_status(page, "src", "completed")
    wait_status(page, "left2", "not_run")
    page.wait_for_selector("#run-banner[data-status=failed]")
    run = Run.objects.get()
    assert f"Run #{run.id}: failed" in page.inner_text("#run-banner")
    page.shot("finished")

    # the failed node: its error comes first, then its files and its log
    select(page, "left")
    page.click("[data-tab=outputs]")
    page.wait_for_selector("#tab-outputs .node-error")
    first = page.locator("#tab-outputs > *").nth(1)
    assert "asked to fail" in first.inner_text()
    page.wait_for_selector("#log-text:has-text('asked to fail')")
    # a completed node: output files with download links, and its metric chart
    select(page, "right")
    page.wait_for_selector("#tab-outputs ul.files[data-port=out] a")
    with page.expect_download() as dl:
        page.click("#tab-outputs ul.files[data-port=out] a:text('value.txt')")
    assert Path(dl.value.path()).read_text() == "15"
    page.wait_for_selector("#log-text:has-text('total 15')")
    page.click("[data-tab=metrics]")
    page.wait_for_selector("#tab-metrics canvas[data-metric=total]")
    # the runs list, with durations
    page.click("[data-tab=runs]")
    row = page.locator(f"#tab-runs tr[data-run='{run.id}']")
    row.wait_for()
    assert "failed" in row.inner_text() and " s" in row.inner_text()
    page.shot("runs")


def test_a_run_is_cancelled_from_the_page_and_a_reload_catches_up(page, users, shared_worker):
    p = open_designer(page, users["owner"], two_branches(sleep=30.0))
    page.click("#submit")
    wait_status(page, "right", "running")
    run = Run.objects.get()
    page.reload()  # a new page: it catches up from the stored status and events
    page.goto(f"{page.base}/pipelines/{p.id}/?run={run.id}")
    wait_status(page, "right", "running")
    page.click("#cancel-run")
    page.wait_for_selector("#run-banner[data-status=cancelled]", timeout=30_000)
    assert status(page, "right") == "cancelled"
    assert Run.objects.get().status == "cancelled"


def test_when_the_server_goes_away_mid_run_the_page_says_so_reconnects_and_catches_up(browser, users, shared_worker, transactional_db):
    from tests.e2e.conftest import Server, sign_in

    server = Server().wait_ready()
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    try:
        sign_in(context, server, users["owner"])
        page = context.new_page()
        page.set_default_timeout(20_000)
        page.base = server.url
        open_designer(page, users["owner"], two_branches(sleep=3.0))
        page.click("#submit")
        wait_status(page, "right", "running")
        server.stop()
        page.wait_for_selector("#banner >> text=Lost the connection to the server; reconnecting")
        page.screenshot(path="test-results/server-gone.png")
        server = Server(server.port).wait_ready()  # back on the same address
        wait_status(page, "right", "completed", timeout=40_000)
        wait_status(page, "left2", "completed", timeout=40_000)
        page.wait_for_selector("#run-banner[data-status=completed]")
        assert page.locator("#banner").is_hidden()
    finally:
        context.close()
        server.stop()
