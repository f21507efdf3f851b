"""Submitting from the page and watching the run live; runs list; cancel; outputs, logs, metrics."""
import re
import time
from pathlib import Path

import pytest
from playwright.sync_api import expect

from designer.pipelines.models import Run, Worker
from tests.e2e.helpers import CHART_OF, chart_of, metric_points, node, open_designer
from tests.machine import patience
from tests.pipes import link, pipeline, two_branches
from tests.pipes import node as n

pytestmark = pytest.mark.browser


def status(page, nid):
    return node(page, nid).locator("[data-status]").get_attribute("data-status")


def wait_status(page, nid, wanted, timeout=30_000):
    page.wait_for_selector(f'#canvas g[data-cell-id="{nid}"] [data-status="{wanted}"]', timeout=timeout)


def select(page, nid):
    box = node(page, nid).bounding_box()
    page.mouse.click(box["x"] + 60, box["y"] + 15)


@pytest.mark.production  # the second pass: statuses through Redis (channel layer and broker) and PostgreSQL
def test_a_submitted_run_shows_every_status_live_with_outputs_logs_and_metrics(page, users, shared_worker, tmp_path):
    hold = tmp_path / "hold"  # "left" runs on only once the page has shown it running
    hold.touch()
    open_designer(page, users["owner"], two_branches(fail_left=True, sleep=1.0, hold=str(hold)))
    page.click("#submit")
    wait_status(page, "left", "running")  # seen while it runs, through the websocket
    page.shot("running")
    hold.unlink()
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
    page.wait_for_selector("#tab-metrics canvas[data-metrics~=total]")
    # the runs list, with durations
    page.click("[data-tab=runs]")
    row = page.locator(f"#tab-runs tr[data-run='{run.id}']")
    row.wait_for()
    assert "failed" in row.inner_text() and " s" in row.inner_text()
    page.shot("runs")


def statuses(page, ids):
    return {nid: status(page, nid) for nid in ids}


def test_queued_reused_and_regenerated_statuses_and_the_runs_history(page, users, shared_worker):
    """Three branches on a worker of two slots: one waits, shown queued. Submitted again unchanged,
    every node is reused; with Regenerate output ticked on one node, that node runs again."""
    # sleep=5.0: the page saves it back as 5 (a JavaScript number), and the nodes are reused all the same;
    # 5 s of one waiting while two run: a page slowed by a busy machine still draws that moment
    doc = pipeline([n("src", "toy_source", value=1)] + [n(b, "toy_add", amount=1, sleep=5.0) for b in "abc"],
                   [link("src", b) for b in "abc"])
    open_designer(page, users["owner"], doc)
    # every combination of the three statuses the page draws, however briefly (a busy machine may
    # not give a poll the moment when one waits while two run)
    page.evaluate("""() => {
        window.seenStatuses = new Set();
        const note = () => window.seenStatuses.add(['a', 'b', 'c'].map(id => document.querySelector(
            `#canvas g[data-cell-id="${id}"] [data-status]`)?.getAttribute('data-status')).sort().join());
        new MutationObserver(note).observe(document.querySelector('#canvas'), {subtree: true, attributes: true, attributeFilter: ['data-status']});
    }""")
    page.click("#submit")
    page.wait_for_selector("#run-banner[data-status=completed]", timeout=patience(60_000))
    seen = page.evaluate("[...window.seenStatuses]")
    assert "queued,running,running" in seen, seen  # two workers' slots: the third waited, and the page said so
    assert set(statuses(page, "abc").values()) == {"completed"}
    first = Run.objects.get()

    page.click("#submit")  # unchanged: every node's output is reused
    page.wait_for_selector(f"#run-banner[data-status=completed]:has-text('Run #{first.id + 1}')", timeout=30_000)
    assert statuses(page, ["src", *"abc"]) == {"src": "reused", "a": "reused", "b": "reused", "c": "reused"}
    # a node that did no work says whose outputs it has, not a time; the banner counts them
    assert f"reused · run #{first.id}" in node(page, "a").text_content().replace("\xa0", " ")
    assert "4/4 modules done (4 reused)" in page.inner_text("#run-banner")
    page.shot("reused")

    select(page, "b")
    page.wait_for_selector("#node-form[data-node=b]")
    page.check("#regenerate-output")
    # every status b is drawn with, however briefly (a page that connects late replays the events)
    page.evaluate("""() => {
        window.statusesOfB = [];
        new MutationObserver(records => records.filter(r => r.target.closest('g[data-cell-id="b"]'))
            .forEach(r => window.statusesOfB.push(r.oldValue, r.target.getAttribute('data-status'))))
            .observe(document.querySelector('#canvas'), {subtree: true, attributes: true, attributeOldValue: true, attributeFilter: ['data-status']});
    }""")
    page.click("#submit")
    third = first.id + 2
    page.wait_for_selector(f"#run-banner:has-text('Run #{third}')")
    page.wait_for_selector(f"#run-banner[data-status=completed]:has-text('Run #{third}')", timeout=30_000)
    assert "running" in page.evaluate("window.statusesOfB"), page.evaluate("window.statusesOfB")
    assert statuses(page, ["src", *"abc"]) == {"src": "reused", "a": "reused", "b": "completed", "c": "reused"}
    assert Run.objects.get(pk=third).nodes.get(node_id="b").reused_from is None

    # the history: every run with its duration; the oldest shows its own statuses again
    page.click("[data-tab=runs]")
    rows = page.locator("#tab-runs tr[data-run]")
    page.wait_for_function("document.querySelectorAll('#tab-runs tr[data-run]').length === 3")
    texts = {int(rows.nth(i).get_attribute("data-run")): rows.nth(i).inner_text() for i in range(3)}
    assert set(texts) == {first.id, first.id + 1, third}
    for text in texts.values():
        assert "completed" in text and re.search(r"\b\d+\.\d s\b", text), text
    page.locator(f"#tab-runs tr[data-run='{first.id}'] button").click()
    page.wait_for_selector(f"#run-banner:has-text('Run #{first.id}: completed')")
    page.wait_for_function("document.querySelector('#canvas g[data-cell-id=\"a\"] [data-status]').getAttribute('data-status') === 'completed'")
    assert statuses(page, ["src", *"abc"]) == {"src": "completed", "a": "completed", "b": "completed", "c": "completed"}
    assert f"run={first.id}" in page.url
    page.shot("history")
    # two runs ticked in the history: compared side by side
    assert page.get_attribute("#compare-picked", "aria-disabled") == "true"
    page.check(f"#tab-runs tr[data-run='{first.id}'] input.pick")
    page.check(f"#tab-runs tr[data-run='{third}'] input.pick")
    assert page.get_attribute("#compare-picked", "aria-disabled") == "false" and "2 ticked" in page.inner_text("#runs-picked")
    page.click("#compare-picked")
    page.wait_for_selector("html[data-compare-ready=true]")
    assert page.locator("#compared-runs tr[data-run]").count() == 2


def test_a_loss_spread_over_two_decades_is_drawn_on_a_log_axis(page, users, shared_worker):
    """1/epoch over 150 epochs falls 150-fold: on a linear axis all but the first epochs lie flat
    on zero. Over 5 epochs (5-fold) and for the accuracy, the axis stays linear."""
    open_designer(page, users["owner"], pipeline([n("long", "toy_training", epochs=150, epoch_seconds=0),
                                                  n("short", "toy_training", epochs=5, epoch_seconds=0)], []))
    page.click("#submit")
    page.wait_for_selector("#run-banner[data-status=completed]", timeout=patience(60_000))
    select(page, "long")
    page.click("[data-tab=metrics]")
    loss = chart_of(page, "loss")
    assert (loss["y"], loss["yTitle"], len(loss["lines"][0]["points"])) == ("logarithmic", "log scale", 150)
    assert chart_of(page, "accuracy")["y"] == "linear"
    page.shot("log-axis")
    select(page, "short")
    page.wait_for_function(f"({CHART_OF})('loss') && ({CHART_OF})('loss').lines[0].points.length === 5")
    assert (chart_of(page, "loss")["y"], chart_of(page, "loss")["yTitle"]) == ("linear", "")


def test_metrics_chart_grows_while_the_node_trains(page, users, shared_worker, tmp_path):
    hold = tmp_path / "hold"  # the training waits after its first epoch until the chart has shown it
    hold.touch()
    open_designer(page, users["owner"], pipeline([n("train", "toy_training", epochs=14, epoch_seconds=1.2, hold_file=str(hold))], []))
    page.click("#submit")
    wait_status(page, "train", "running")
    select(page, "train")
    page.click("[data-tab=metrics]")
    page.wait_for_function(f"({CHART_OF})('loss') && ({CHART_OF})('loss').lines[0].points.length === 1")
    seen = metric_points(page, "loss")
    hold.unlink()
    page.wait_for_function(f"({CHART_OF})('loss').lines[0].points.length > {seen}", timeout=10_000)
    grown = metric_points(page, "loss")
    assert status(page, "train") == "running" and grown < 14, grown  # drawn while it trains, not at the end
    page.shot("metrics-live")
    wait_status(page, "train", "completed", timeout=patience(60_000))
    page.wait_for_function(f"({CHART_OF})('loss').lines[0].points.length === 14 && ({CHART_OF})('accuracy').lines[0].points.length === 14")
    loss = chart_of(page, "loss")
    assert loss["title"] == "Loss" and loss["x"] == "step" and loss["lines"][0]["points"][-1] == {"x": 14, "y": 1 / 14}


def test_a_distributed_node_lists_a_log_per_rank_and_tails_it_live(page, users, shared_worker):
    """1 node x 2 processes of the toy distributed module (tests/toy_rank.py) on one worker."""
    deadline = time.monotonic() + 30  # the test's database flush removed the worker's row until its next beat
    while not Worker.objects.filter(hostname=shared_worker.hostname).exists():
        assert time.monotonic() < deadline, "the worker did not register"
        time.sleep(0.1)
    toy = n("toy", "toy_distributed", steps=50, step_seconds=0.5)  # 25 s: the page follows the log while it grows
    toy["run_settings"] = {"node_count": 1, "process_count_per_node": 2}
    open_designer(page, users["owner"], pipeline([toy], []))
    page.click("#submit")
    wait_status(page, "toy", "running")
    select(page, "toy")
    page.click("[data-tab=outputs]")
    wanted = ["70_driver_log_0.txt", "70_driver_log_1.txt", "70_mpi_log.txt"]
    page.wait_for_function(f"(() => {{ const s = document.querySelector('#log-file'); return !!s && {wanted!r}.every(f => [...s.options].some(o => o.value === f)); }})()", timeout=patience(60_000))
    # rank 0's log first: what the script printed (the node's own log holds only the designer's lines)
    assert page.locator("#log-file option").first.get_attribute("value") == "70_driver_log_0.txt"
    page.select_option("#log-file", "70_driver_log_1.txt")
    page.wait_for_selector("#log-text:has-text('step 1: sum 2')", timeout=30_000)
    before = len(page.inner_text("#log-text"))
    page.wait_for_function(f"document.querySelector('#log-text').textContent.length > {before}", timeout=10_000)
    assert status(page, "toy") == "running"  # the text grew while the node ran: a live tail
    assert "rank 1 of 2" in page.inner_text("#log-text")
    page.shot("distributed-logs")
    wait_status(page, "toy", "completed", timeout=patience(60_000))
    # the pane is drawn again for the completed node: the log the user chose stays, to its end
    page.wait_for_selector("#log-text:has-text('step 50: sum 2')")
    assert page.locator("#log-file").input_value() == "70_driver_log_1.txt"
    page.select_option("#log-file", "70_mpi_log.txt")
    page.wait_for_selector("#log-text:has-text('every node finished')")
    assert page.locator("#tab-outputs a:text('download 70_driver_log_0.txt')").count() == 1


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
    # its Outputs + logs say so as what the user did, not as an error
    select(page, "right")
    page.click("[data-tab=outputs]")
    note = page.locator("#tab-outputs .node-error")
    expect(note).to_contain_text("Cancelled by the user")
    assert note.locator("strong").inner_text() == "Cancelled" and note.get_attribute("role") == "status"
    page.shot("cancelled-outputs")


def test_when_the_server_goes_away_mid_run_the_page_says_so_reconnects_and_catches_up(request, browser, users, shared_worker, transactional_db, tmp_path):
    from tests.conftest import wait_for_run
    from tests.e2e.conftest import Server, shot_dir, sign_in

    server = Server().wait_ready()
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    try:
        sign_in(context, server, users["owner"])
        page = context.new_page()
        page.set_default_timeout(patience(20_000))
        page.base = server.url
        # "right" and "left2" run on only once the server has gone: the page must not see them end first
        hold = tmp_path / "hold"
        hold.touch()
        open_designer(page, users["owner"], two_branches(sleep=1.0, hold=str(hold), held=("right", "left2")))
        page.click("#submit")
        wait_status(page, "right", "running")
        server.stop()
        page.wait_for_selector("#banner >> text=Lost the connection to the server; reconnecting")
        hold.unlink()
        # the run goes on without the web server, to its end
        run = wait_for_run(Run.objects.get().id, timeout=60)
        assert run.status == "completed"
        page.screenshot(path=str(shot_dir(request) / "server-gone.png"))
        # the page cannot know yet: it still shows what it saw before the server went away
        assert status(page, "right") == "running"
        assert status(page, "left2") != "completed"
        assert page.locator("#run-banner").get_attribute("data-status") != "completed"
        server = Server(server.port).wait_ready()  # back on the same address
        page.wait_for_selector("#banner >> text=Reconnected to the server", timeout=30_000)
        for nid in ("src", "left", "left2", "right"):
            wait_status(page, nid, "completed")
        page.wait_for_selector("#run-banner[data-status=completed]")
        assert f"run #{run.id} is shown as it is now (completed)" in page.inner_text("#banner")
        page.screenshot(path=str(shot_dir(request) / "caught-up.png"))
    finally:
        context.close()
        server.stop()


def test_a_runs_outputs_show_the_parameters_it_ran_with_beside_the_canvas_values_edited_since(page, users, shared_worker, tmp_path):
    import io

    from django.core.management import call_command

    from tests.e2e.helpers import select, set_parameters

    (tmp_path / "pets" / "cats").mkdir(parents=True)
    (tmp_path / "pets" / "cats" / "1.png").write_bytes(b"not really a png")
    out = io.StringIO()
    call_command("add_dataset", str(tmp_path / "pets"), owner="owner", name="pets", stdout=out)
    open_designer(page, users["owner"], pipeline([n("src", "toy_source", value=10), n("ds", "dataset", dataset=int(out.getvalue()))], []))
    page.click("#submit")
    wait_status(page, "src", "completed")
    wait_status(page, "ds", "completed")
    # a dataset is named as on the canvas; the file the server found for it at submit is no one's
    # choice and no change since
    select(page, "ds")
    page.click("[data-tab=outputs]")
    ran = page.locator("#ran-with")
    expect(ran.locator("tr[data-param=dataset] td")).to_have_text("pets")
    assert ran.locator("tr").count() == 1 and ran.locator("summary").inner_text() == f"Parameters in run #{Run.objects.get().id}"
    page.click("[data-tab=module]")
    set_parameters(page, "src", {"value": 42})  # edited after the run: the run still shows what it ran with
    page.click("[data-tab=outputs]")
    ran = page.locator("#ran-with")
    expect(ran.locator("tr[data-param=value] td")).to_have_text("10 (now 42)")
    assert ran.get_attribute("open") is not None and "1 changed on the canvas since" in ran.locator("summary").inner_text()
    assert ran.locator("tr[data-param=sleep] td").inner_text() == "0"  # unchanged: no "now"
    page.shot("ran-with")


def test_a_node_that_ran_again_after_its_worker_was_lost_lists_its_attempts(page, users, shared_worker):
    """What the maintenance loop records when it sends a node back to the queue (tests/runs/
    test_worker_loss.py does it for real) is what the node's Outputs + logs tab lists; the node's
    Max retries is a run setting of every module."""
    from designer.pipelines.models import NodeRun

    open_designer(page, users["owner"], pipeline([n("src", "toy_source", value=10)], []))
    select(page, "src")
    expect(page.locator("#rs-max_retries")).to_have_value("2")  # the default
    page.click("#submit")
    wait_status(page, "src", "completed")
    nr = NodeRun.objects.get(node_id="src")
    lost = {"attempt": 1, "worker": "gpu-box-7:w1", "reason": "WorkerLostError: the worker gpu-box-7:w1 stopped responding "
            "while running this node (no heartbeat since 2026-11-29 10:00:00 UTC): it was killed or lost.",
            "started_at": "2026-11-29T09:58:00+00:00", "lost_at": "2026-11-29T10:00:00+00:00", "retried_at": "2026-11-29T10:00:30+00:00"}
    NodeRun.objects.filter(pk=nr.pk).update(attempt=2, attempts=[lost])
    select(page, "src")
    page.click("[data-tab=outputs]")
    items = page.locator("#attempts li")
    expect(items).to_have_count(2)
    first = items.nth(0).inner_text()
    assert first.startswith("Attempt 1 on gpu-box-7:w1: lost (last heard of at") and "150 s after it started" in first
    assert "WorkerLostError: the worker gpu-box-7:w1 stopped responding" in first
    assert items.nth(1).inner_text().startswith(f"Attempt 2 on {nr.worker_label}: completed")
    page.shot("attempts")
