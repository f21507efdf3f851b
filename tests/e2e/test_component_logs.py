"""A component's output in the page: a script that prints a million lines leaves a log the page
shows from its end (bounded, readable, the page responsive); a script that raises shows its
traceback's last lines on the node; its `##metric` lines draw the Metrics pane."""
import time

import pytest

from designer.pipelines.models import NodeRun, Run
from tests.e2e.helpers import node, open_designer
from tests.machine import patience
from tests.pipes import node as n
from tests.pipes import pipeline

pytestmark = pytest.mark.browser
MILLION = 1_000_000


def wait_status(page, nid, wanted, timeout=patience(120_000)):
    page.wait_for_selector(f'#canvas g[data-cell-id="{nid}"] [data-status="{wanted}"]', timeout=timeout)


def select(page, nid):
    box = node(page, nid).bounding_box()
    page.mouse.click(box["x"] + 60, box["y"] + 15)


def test_a_million_lines_leave_a_readable_log_and_a_responsive_page(page, users, shared_worker):
    open_designer(page, users["owner"], pipeline([n("chat", "test_chatty", lines=MILLION, every=100_000)], []))
    page.click("#submit")
    wait_status(page, "chat", "completed")
    nr = NodeRun.objects.get(run=Run.objects.get(), node_id="chat")
    assert not Run.objects.get().events.filter(type="log").exists()  # no database row for its lines: they are in the file
    select(page, "chat")
    page.click("[data-tab=outputs]")
    page.wait_for_selector("#log-note:not([hidden])")
    assert "A long log" in page.inner_text("#log-note")
    page.wait_for_selector(f"#log-text:has-text('line {MILLION} of {MILLION}')")
    shown = page.evaluate("document.querySelector('#log-text').textContent.length")
    assert 0 < shown <= 1_100_000  # the end, not 20 MB of text in the page
    started = time.monotonic()
    page.click("[data-tab=metrics]")  # the page answers at once
    page.wait_for_selector("#tab-metrics canvas[data-metrics~=progress]")
    assert time.monotonic() - started < 30  # (a second or two; 30 on a busy machine)
    page.shot("million-lines-metrics")
    page.click("[data-tab=outputs]")
    page.wait_for_selector(f"#log-text:has-text('line {MILLION} of {MILLION}')")
    page.shot("million-lines-log")
    assert nr.error == ""


def test_a_script_that_raises_shows_its_traceback_on_the_node(page, users, shared_worker):
    open_designer(page, users["owner"], pipeline([n("chat", "test_chatty", lines=3, fail=True)], []))
    page.click("#submit")
    wait_status(page, "chat", "failed")
    select(page, "chat")
    page.click("[data-tab=outputs]")
    page.wait_for_selector("#tab-outputs .node-error")
    error = page.inner_text("#tab-outputs .node-error")
    assert "RuntimeError: chatty was asked to fail" in error and "exited with code 1" in error
    # a long path of the traceback wraps inside the box instead of running past the pane's edge
    overflow = page.evaluate("(() => { const p = document.querySelector('#tab-outputs .node-error pre');"
                             " return p.scrollWidth - p.clientWidth; })()")
    assert overflow <= 1
    page.shot("traceback")


def test_a_component_node_shows_its_version_command_and_timeout_in_the_pane(page, users):
    from tests.e2e.helpers import saved

    open_designer(page, users["owner"], pipeline([n("chat", "test_chatty", lines=3)], []))
    select(page, "chat")
    page.wait_for_selector("#component-info")
    assert "Component test_chatty, version 1" in page.inner_text("#component-info summary")
    page.click("#component-info summary")
    assert "python chatty.py --lines {params.lines}" in page.inner_text("#component-info pre")
    assert "tests/components/chatty/component.yaml, installed on this server" in page.inner_text("#component-info")
    overflow = page.evaluate("(() => { const p = document.querySelector('#component-info pre');"
                             " return p.scrollWidth - p.clientWidth; })()")
    assert overflow <= 1  # the command wraps inside the pane
    assert page.locator("#rs-node_count").count() == 0  # not distributed: the timeout only
    page.fill("#rs-timeout_seconds", "-5")
    page.locator("#rs-timeout_seconds").blur()
    page.wait_for_selector("#error-timeout_seconds:not(:empty)")
    assert "must be between 0 (no limit)" in page.inner_text("#error-timeout_seconds")
    page.fill("#rs-timeout_seconds", "90")
    page.locator("#rs-timeout_seconds").blur()
    page.wait_for_selector("#error-timeout_seconds:empty", state="attached")
    chat = saved(page).draft["nodes"][0]
    assert chat["run_settings"] == {"timeout_seconds": 90} and chat["version"] == 1
    page.shot("component-pane")
