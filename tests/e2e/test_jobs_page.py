"""The Jobs page in Chromium: real runs (inline, on the toy modules) and 60 stored ones, found by
filters, sorted by a metric column, paged 50 at a time, and two of them compared side by side;
looked at 1440 and 1024 px wide (nothing overlapping, nothing cut off)."""
from datetime import timedelta

import pytest
from django.utils import timezone

from designer.pipelines.models import Pipeline, Run
from designer.pipelines.runs import service as runs
from tests.e2e.conftest import shot_dir
from tests.pipes import link, node, pipeline

pytestmark = pytest.mark.browser


def trainer(epochs):
    return pipeline([node("t", "toy_training", epochs=epochs, epoch_seconds=0), node("src", "toy_source", value=1),
                     node("add", "toy_add", amount=epochs)], [link("src", "add")], name="digits")


def filler(user, n):
    """`n` older finished runs of another experiment (the page only reads rows)."""
    now = timezone.now()
    made = Run.objects.bulk_create(Run(owner=user, name=f"old run {i:02d}", snapshot={}, status="completed", experiment="archive",
                                       source="headless", started_at=now, finished_at=now + timedelta(seconds=5))
                                   for i in range(n))
    Run.objects.filter(pk__in=[r.pk for r in made]).update(submitted_at=now - timedelta(days=1))


def no_overlap(page, selector):
    """Every cell of `selector`'s first row lies beside the next, and the table inside the window."""
    return page.evaluate("""(sel) => {
        const cells = [...document.querySelectorAll(sel)].map(c => c.getBoundingClientRect());
        const table = document.querySelector('#jobs').getBoundingClientRect();
        const overlaps = cells.slice(1).some((c, i) => c.left < cells[i].right - 1);
        return !overlaps && table.right <= document.documentElement.clientWidth + 1; }""", selector)


def test_find_sort_page_and_compare_jobs(page, users, request):
    owner = users["owner"]
    p = Pipeline.objects.create(owner=owner, name="digits", draft=trainer(2))
    two = runs.submit(owner, trainer(2), pipeline=p, inline=True, source="page")
    five = runs.submit(owner, trainer(5), pipeline=p, inline=True, source="api")
    Run.objects.filter(pk=five.pk).update(tags={"lr": "0.01", "team": "cv"})
    filler(owner, 60)

    page.goto(page.base + "/")
    page.click(".topbar a:text('Jobs')")
    assert page.inner_text("#job-count") == "62 jobs · page 1 of 2"
    assert page.locator("#jobs tbody tr").count() == 50
    assert page.get_attribute(".topbar a:text('Jobs')", "aria-current") == "page"

    # the next page has the 12 left
    page.click("#next-page")
    assert page.locator("#jobs tbody tr").count() == 12
    assert "page 2 of 2" in page.inner_text("#job-count")

    # filtered by experiment, then by tag and source: the row says what the filter matched
    page.goto(page.base + "/jobs/")
    page.select_option("select[name=experiment]", "digits")
    page.click("#apply-filters")
    page.wait_for_selector("#job-count:text('2 jobs')")
    page.fill("input[name=tag]", "team=cv")
    page.select_option("select[name=source]", "api")
    page.click("#apply-filters")
    page.wait_for_selector("#job-count:text('1 job')")
    row = page.locator(f"#jobs tr[data-id='{five.id}']")
    assert row.locator(".tag").all_inner_texts() == ["lr: 0.01", "team: cv"]
    assert row.locator("td.source").inner_text() == "api"
    page.click("#clear-filters")

    # the metric columns chosen, sorted by one: the highest accuracy first, then reversed
    page.select_option("select[name=experiment]", "digits")
    page.click(".metric-columns summary")
    page.check(".metric-columns input[value=accuracy]")
    page.check(".metric-columns input[value=loss]")
    page.click("#apply-filters")
    page.click("#jobs th[data-column='metric:accuracy'] a")
    page.wait_for_selector("#jobs th[data-column='metric:accuracy'][aria-sort=descending]")
    ids = page.locator("#jobs tbody tr").evaluate_all("rows => rows.map(r => r.dataset.id)")
    assert ids == [str(five.id), str(two.id)]
    assert page.locator(f"#jobs tr[data-id='{five.id}'] td[data-metric=accuracy]").inner_text() == "0.9"
    assert page.locator(f"#jobs tr[data-id='{two.id}'] td[data-metric=loss]").inner_text() == "0.5"
    page.click("#jobs th[data-column='metric:accuracy'] a")
    page.wait_for_selector("#jobs th[data-column='metric:accuracy'][aria-sort=ascending]")
    assert page.locator("#jobs tbody tr").evaluate_all("rows => rows.map(r => r.dataset.id)") == [str(two.id), str(five.id)]

    for width in (1440, 1024):
        page.set_viewport_size({"width": width, "height": 900})
        assert no_overlap(page, "#jobs thead th"), width
        assert no_overlap(page, "#jobs tbody tr:first-child td"), width
        page.screenshot(path=str(shot_dir(request) / f"jobs-{width}.png"), full_page=True)

    # compare: offered once two runs are ticked; their parameters and metrics side by side
    assert page.is_disabled("#compare-runs")
    page.check(f"#jobs tr[data-id='{two.id}'] input.pick")
    page.check(f"#jobs tr[data-id='{five.id}'] input.pick")
    assert page.inner_text("#picked-note") == "2 ticked"
    page.click("#compare-runs")
    page.wait_for_selector("html[data-compare-ready=true]")
    assert page.locator("#differences tr[data-key='node:t:toy_training:epochs'] td").all_inner_texts() == ["2", "5"]
    assert page.locator("#final-metrics tr[data-key='Toy training: loss'] td").all_inner_texts() == ["0.5", "0.2"]
