"""Comparing runs in the browser: picked on the runs list, then what differs, the final metrics
side by side (the best marked) and every metric's curves overlaid, one colour per run."""
import re

import pytest

from designer.pipelines.models import Pipeline
from designer.pipelines.runs import service as runs
from tests.e2e.conftest import shot_dir
from tests.pipes import link, node, pipeline

pytestmark = pytest.mark.browser


def trainer(epochs, amount):
    return pipeline([node("t", "toy_training", epochs=epochs, epoch_seconds=0), node("src", "toy_source", value=1),
                     node("add", "toy_add", amount=amount)], [link("src", "add")], name="trainer")


def datasets(page, selector):
    """The lines drawn on a Chart.js canvas: [(label, number of points)]."""
    return page.evaluate("""(sel) => Chart.getChart(document.querySelector(sel)).data.datasets
        .map(d => [d.label, d.data.length])""", selector)


def full_shot(page, request, name):
    page.screenshot(path=str(shot_dir(request) / f"{name}.png"), full_page=True)


def test_two_real_runs_side_by_side_from_the_runs_list(page, users, request):
    owner = users["owner"]
    p = Pipeline.objects.create(owner=owner, name="trainer", draft=trainer(3, 1))
    a = runs.submit(owner, trainer(3, 1), pipeline=p, name=p.name, inline=True)
    b = runs.submit(owner, trainer(6, 4), pipeline=p, name=p.name, inline=True)
    c = runs.submit(owner, trainer(2, 1), pipeline=p, name=p.name, inline=True)  # listed, not picked

    page.goto(page.base + "/")
    duration = page.inner_text(f"#recent-runs tr[data-run='{a.id}'] td.duration")
    assert re.fullmatch(r"\d+\.\d s", duration), duration  # as the designer writes it
    page.check(f"#recent-runs tr[data-run='{a.id}'] input.pick")
    page.check(f"#recent-runs tr[data-run='{b.id}'] input.pick")
    page.shot("runs-list")
    page.click("#compare-runs")
    page.wait_for_selector("html[data-compare-ready=true]")
    assert f"runs={b.id}&runs={a.id}" in page.url  # the list shows the newest first; the columns go oldest first

    # the differences: epochs and amount, nothing that is the same in both
    rows = page.locator("#differences tbody tr")
    assert rows.count() == 2
    epochs = page.locator("#differences tr[data-key='node:t:toy_training:epochs']")
    assert epochs.is_visible()
    assert epochs.locator("th").inner_text() == "Toy training: Epochs"
    assert epochs.locator("td").all_inner_texts() == ["3", "6"]
    assert page.locator("#differences tr[data-key='node:add:toy_add:amount'] td").all_inner_texts() == ["1", "4"]

    # final metrics: the lower loss and the higher accuracy are marked
    loss = page.locator("#final-metrics tr[data-key='Toy training: loss']")
    assert loss.locator("td").all_inner_texts() == ["0.3333", "0.1667"]
    assert loss.locator("td.best").get_attribute("data-run") == str(b.id)
    accuracy = page.locator("#final-metrics tr[data-key='Toy training: accuracy']")
    assert accuracy.locator("td.best").get_attribute("data-run") == str(b.id)
    total = page.locator("#final-metrics tr[data-key='Toy add: total']")
    assert total.count() == 1 and total.locator("td.best").count() == 0  # no way is better

    # every metric's curves, one line per run, named in the legend
    assert page.locator("#curves canvas").count() == 3
    assert datasets(page, "#curves canvas[data-metric='Toy training: loss']") == [
        [f"#{a.id} trainer", 3], [f"#{b.id} trainer", 6]]
    page.set_viewport_size({"width": 1440, "height": 900})
    full_shot(page, request, "compare-1440")
    page.set_viewport_size({"width": 1024, "height": 900})
    full_shot(page, request, "compare-1024")

    # four runs: every chart's plot keeps its height under the legend, and the last epoch's marker is drawn whole
    d = runs.submit(owner, trainer(4, 2), pipeline=p, name=p.name, inline=True)
    page.goto(f"{page.base}/runs/compare?runs={a.id},{b.id},{c.id},{d.id}")
    page.wait_for_selector("html[data-compare-ready=true]")
    for width in (1440, 1024):
        page.set_viewport_size({"width": width, "height": 900})
        areas = page.evaluate("""[...document.querySelectorAll('#curves canvas')].map(c => { const ch = Chart.getChart(c);
            ch.resize(); return [ch.chartArea.bottom - ch.chartArea.top, ch.width - ch.chartArea.right, ch.chartArea.top]; })""")
        assert all(height >= 150 and right >= 6 and top >= 6 for height, right, top in areas), (width, areas)
    full_shot(page, request, "compare-4-runs-1024")
    page.goto(f"{page.base}/runs/compare?runs={b.id},{a.id}")
    page.wait_for_selector("html[data-compare-ready=true]")

    # a run's page is one click away
    page.click(f"#compared-runs a:text('Run #{a.id}')")
    page.wait_for_selector("html[data-designer-ready=true]")
    assert f"/pipelines/{p.id}/?run={a.id}" in page.url


def test_picking_one_run_says_what_is_missing(page, users):
    owner = users["owner"]
    p = Pipeline.objects.create(owner=owner, name="trainer", draft=trainer(2, 1))
    a = runs.submit(owner, trainer(2, 1), pipeline=p, name=p.name, inline=True)
    page.goto(page.base + "/")
    assert page.locator("#compare-runs").is_disabled() and page.locator("#delete-runs").is_disabled()
    page.check(f"#recent-runs tr[data-run='{a.id}'] input.pick")
    # one run ticked: deleting it is offered, comparing is not yet
    assert page.locator("#compare-runs").is_disabled() and page.locator("#delete-runs").is_enabled()
    assert page.inner_text("#picked-note") == "1 ticked"
    page.shot("one-ticked")
    # a comparison's address typed with one run says what is missing
    page.goto(f"{page.base}/runs/compare?runs={a.id}")
    page.wait_for_selector("#compare-error")
    assert page.inner_text("#compare-error") == f"comparing needs at least 2 runs: only run {a.id} was given (e.g. ?runs=4,7)"
    page.shot("one-run")


def test_a_run_that_kept_an_earlier_epoch_is_compared_by_that_epoch(page, users, request):
    """The sweep page ranks trials by the epoch whose model each kept: so does the comparison."""
    owner = users["owner"]

    def tuner(lr, keep):
        return pipeline([node("fit", "toy_tuning", learning_rate=lr, epochs=4, epoch_seconds=0, keep_epoch=keep)], [])

    a = runs.submit(owner, tuner(0.01, 2), name="kept 2", inline=True)  # last .875, kept (epoch 2) .75
    b = runs.submit(owner, tuner(0.008, 4), name="kept 4", inline=True)  # last .7, kept (its last) .7
    page.goto(f"{page.base}/runs/compare?runs={a.id},{b.id}")
    page.wait_for_selector("html[data-compare-ready=true]")
    score = page.locator("#final-metrics tr[data-key='Toy tuning: score']")
    assert score.locator("td").all_inner_texts() == ["0.75 (step 2, kept)", "0.7 (step 4, kept)"]
    assert score.locator("td.best").get_attribute("data-run") == str(a.id)
    assert "at the kept epoch" in page.inner_text("#final-metrics thead")
    full_shot(page, request, "compare-kept")
