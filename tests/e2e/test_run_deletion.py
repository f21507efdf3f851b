"""Deleting runs from the page: the run shown on the canvas, and runs ticked in Recent runs."""
import pytest

from designer.pipelines.models import Pipeline, Run
from designer.pipelines.runs import service as runs
from tests.pipes import chain

pytestmark = pytest.mark.browser


def test_the_run_on_the_canvas_is_deleted_from_its_banner_and_others_from_the_home_page(page, users):
    owner = users["owner"]
    p = Pipeline.objects.create(owner=owner, name="chain", draft=chain(2))
    older = runs.submit(owner, chain(2), pipeline=p, name=p.name, inline=True)
    newer = runs.submit(owner, chain(2), pipeline=p, name=p.name, inline=True)

    page.goto(f"{page.base}/pipelines/{p.id}/")
    page.wait_for_selector("html[data-designer-ready=true]")
    page.wait_for_selector(f"#run-banner:has-text('Run #{newer.id}')")
    page.wait_for_selector('#canvas g[data-cell-id="n1"] [data-status="reused"]')
    assert page.locator("#cancel-run").is_hidden() and page.locator("#delete-run").is_visible()
    asked = []
    # a refresh of the run already on its way when it is deleted answers 404: expected
    page.expected_errors.append(f"/api/runs/{newer.id}")
    page.once("dialog", lambda d: (asked.append(d.message), d.accept()))
    page.click("#delete-run")
    page.wait_for_selector(f"#banner:has-text('Run #{newer.id} deleted.')")
    assert asked == [f"Delete run #{newer.id}? Its outputs and logs are removed; an output that a later run reused "
                     "stays with that run, and registered models stay."]
    assert page.locator("#run-banner").is_hidden()
    assert page.locator('#canvas [data-status="reused"]').count() == 0  # no run's statuses on the nodes
    assert "run=" not in page.url
    page.click("[data-tab=runs]")
    page.wait_for_selector(f"#tab-runs tr[data-run='{older.id}']")
    assert page.locator("#tab-runs tr[data-run]").count() == 1
    page.shot("deleted-from-the-banner")
    assert list(Run.objects.all()) == [older]

    # an address that names the deleted run says so, and shows no run
    page.goto(f"{page.base}/pipelines/{p.id}/?run={newer.id}")
    page.wait_for_selector(f"#banner:has-text('Run #{newer.id} is not there: it was deleted.')")
    assert page.locator("#run-banner").is_hidden()

    # the home page: tick, delete, confirm
    page.goto(page.base + "/")
    page.check(f"#recent-runs tr[data-run='{older.id}'] input.pick")
    page.shot("recent-runs-ticked")
    page.once("dialog", lambda d: d.accept())
    page.click("#delete-runs")
    page.wait_for_selector(f".messages li:has-text('Deleted run #{older.id}.')")
    assert page.locator("#recent-runs").count() == 0
    page.shot("deleted-from-the-home-page")
    assert not Run.objects.exists()
