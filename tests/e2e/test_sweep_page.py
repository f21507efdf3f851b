"""The sweep page in the browser, for a real sweep started through the API and run by a worker:
its trials appear and change live, the best is marked, the parallel coordinates and the curves are
drawn; cancel, apply the best values, compare trials. Also the list of sweeps."""
import pytest

from designer.pipelines.models import Pipeline, Sweep
from tests.e2e.conftest import shot_dir
from tests.pipes import link, node, pipeline

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]


def tuning_pipeline(epochs=4, epoch_seconds=0.6, **fit):
    """src -> fit (Toy tuning), its Learning rate and Batch size bound to pipeline parameters."""
    doc = pipeline([node("src", "toy_source", value=1), node("fit", "toy_tuning", epochs=epochs, epoch_seconds=epoch_seconds, **fit)],
                   [link("src", "fit")], name="tuning")
    doc["schema_version"] = 2
    doc["parameters"] = [{"name": "lr", "type": "float", "default": 0.5, "min": 1e-9, "max": 1.0},
                         {"name": "batch", "type": "int", "default": 8, "min": 1, "max": 1024}]
    doc["nodes"][1]["bindings"] = {"learning_rate": "lr", "batch_size": "batch"}
    return doc


def start_sweep(client, owner, total=4, concurrent=2, config=None, **pipeline_options):
    p = Pipeline.objects.create(owner=owner, name="tuning", draft=tuning_pipeline(**pipeline_options))
    config = {"sampling": "random", "seed": 5, "policy": {"type": "NoTerminationPolicy"},
              "parameter_space": [{"name": "lr", "expression": "loguniform", "values": [-9, -3]},
                                  {"name": "batch", "expression": "choice", "values": [16, 32]}],
              "primary_metric_name": "score", "primary_metric_goal": "maximize",
              "max_total_runs": total, "max_concurrent_runs": concurrent, **(config or {})}
    r = client.post("/api/sweeps", {"pipeline": p.id, "config": config, "name": "lr and batch"}, content_type="application/json")
    assert r.status_code == 201, r.content
    return p, r.json()


def full_shot(page, request, name):
    page.screenshot(path=str(shot_dir(request) / f"{name}.png"), full_page=True)


def test_a_sweeps_trials_live_with_its_charts_then_apply_best_and_compare(page, users, owner_client, shared_worker, request, tmp_path):
    # each trial says it kept the model of epoch 3 (as Train PyTorch Model does, its lowest validation loss);
    # the trials wait after their first epoch until the page has shown one running
    hold = tmp_path / "hold"
    hold.touch()
    p, started = start_sweep(owner_client, users["owner"], keep_epoch=3, hold_file=str(hold))
    page.goto(f"{page.base}/sweeps/{started['id']}/")
    page.wait_for_selector("html[data-sweep-loaded]")
    # seen while it runs: a trial running, then finished ones, without reloading the page
    page.wait_for_selector("#trials tr[data-status=running]", timeout=30_000)
    # before a trial has ended, no empty axes: a line says what will come
    assert page.wait_for_selector("#parallel .parallel-empty").inner_text().startswith("No trial has ended with a value of score yet")
    full_shot(page, request, "running")
    hold.unlink()
    page.wait_for_selector("#trials tr[data-status=completed]", timeout=60_000)
    page.wait_for_selector("html[data-sweep-status=completed]", timeout=120_000)
    sweep = Sweep.objects.get(pk=started["id"])
    best = sweep.best_trial
    assert best is not None

    rows = page.locator("#trials tbody tr")
    assert rows.count() == 4
    assert page.inner_text("#sweep-status") == "completed"
    assert page.inner_text("#sweep-message") == sweep.message[0].upper() + sweep.message[1:]
    assert "random sampling · NoTerminationPolicy · maximize score · 4 of 4 trials finished" in page.inner_text("#sweep-facts")
    marked = page.locator("#trials tr.best")
    assert marked.count() == 1 and marked.get_attribute("data-trial") == str(best.number)
    assert "best" in marked.locator("td.number").inner_text()
    assert marked.locator("td[data-param=batch]").inner_text() == str(best.values["batch"])
    metric = marked.locator("td.metric")
    assert metric.inner_text().endswith(" (epoch 3)") and metric.inner_text() != "— (epoch 3)", metric.inner_text()
    assert "at epoch 3, the epoch whose model the training kept" in metric.get_attribute("title")
    assert "its best score was" in metric.get_attribute("title")  # epoch 4 scored higher
    assert page.locator("#curves-note").is_visible()  # the chart marks each trial's kept epoch
    styles = page.evaluate("Chart.getChart(document.querySelector('#curves')).data.datasets[0].pointStyle")
    assert styles == ["circle", "circle", "rectRot", "circle"], styles
    assert marked.locator("a.run-link").get_attribute("href") == f"/pipelines/{p.id}/?run={best.run_id}"
    assert set(rows.locator("td.status").all_inner_texts()) == {"completed"}
    # the charts: a line per finished trial, a log axis for the loguniform rate
    assert page.locator("#parallel polyline.trial-line").count() == 4
    assert page.locator("#parallel polyline.best").get_attribute("data-trial") == str(best.number)
    assert page.text_content("#parallel text[data-axis=lr]") == "lr (log)"
    assert page.evaluate("Chart.getChart(document.querySelector('#curves')).data.datasets.map(d => d.data.length)") == [4] * 4
    page.set_viewport_size({"width": 1440, "height": 900})
    full_shot(page, request, "sweep-1440")
    page.set_viewport_size({"width": 1024, "height": 900})
    page.wait_for_function("""() => {  // the parallel chart is drawn again at the new width
        const box = document.querySelector('#parallel'), chart = box && box.querySelector('svg');
        return chart && Number(chart.getAttribute('width')) === Math.max(360, box.clientWidth); }""")
    full_shot(page, request, "sweep-1024")
    assert page.locator("#cancel-sweep").is_disabled()

    # the best values become the pipeline's defaults
    page.click("#apply-best")
    page.wait_for_selector("#applied-link")
    draft = Pipeline.objects.get(pk=p.id).draft
    assert {x["name"]: x["default"] for x in draft["parameters"]} == best.values
    assert page.get_attribute("#applied-link", "href") == f"/pipelines/{p.id}/"

    # two trials compared
    assert page.locator("#compare-trials").is_disabled()
    page.check("#trials tr[data-trial='0'] input.pick")
    page.check("#trials tr[data-trial='1'] input.pick")
    page.click("#compare-trials")
    page.wait_for_selector("html[data-compare-ready=true]")
    assert page.locator("#differences tr[data-key='parameter:lr']").is_visible()
    assert page.locator("#differences tr[data-key='node:fit:toy_tuning:learning_rate']").is_visible()
    assert page.locator("#compared-runs a:text('trial 0 of sweep')").count() == 1
    full_shot(page, request, "compare-trials")


def test_cancel_from_the_page_ends_the_sweep_and_the_list_shows_it(page, users, owner_client, shared_worker, request):
    p, started = start_sweep(owner_client, users["owner"], total=6, concurrent=1, epochs=100, epoch_seconds=0.5)
    page.goto(f"{page.base}/sweeps/{started['id']}/")
    page.wait_for_selector("#trials tr[data-status=running]", timeout=30_000)
    assert page.locator("#delete-sweep").is_disabled()  # running: cancelled first
    page.click("#cancel-sweep")
    page.wait_for_selector("html[data-sweep-status=cancelled]", timeout=60_000)
    page.wait_for_selector("#trials tr[data-status=cancelled]", timeout=30_000)
    full_shot(page, request, "cancelled")

    page.click("header a:text('Sweeps')")
    row = page.locator(f"#sweeps tr[data-sweep='{started['id']}']")
    row.wait_for()
    assert "cancelled" in row.inner_text() and "lr and batch" in row.inner_text()
    full_shot(page, request, "list")
    row.locator("a", has_text="lr and batch").click()
    page.wait_for_selector("html[data-sweep-status=cancelled]")

    # over, it can be deleted (asked first); the list no longer has it, its trials' runs stay
    trial_runs = [t["run"] for t in owner_client.get(f"/api/sweeps/{started['id']}").json()["trials"] if t["run"]]
    asked = []
    page.once("dialog", lambda d: (asked.append(d.message), d.accept()))
    page.click("#delete-sweep")
    page.wait_for_url(f"{page.base}/sweeps/")
    assert asked == ["Delete the sweep \"lr and batch\"? Its trials' runs stay in the pipeline's runs."]
    assert page.locator(f"#sweeps tr[data-sweep='{started['id']}']").count() == 0
    assert all(owner_client.get(f"/api/runs/{r}").status_code == 200 for r in trial_runs)


def test_a_trial_its_policy_stopped_reads_early_terminated(page, users, owner_client, shared_worker, request):
    """A rate 1000x too small meets a good one: the Bandit policy stops it before its last epoch."""
    config = {"sampling": "grid", "policy": {"type": "BanditPolicy", "evaluation_interval": 1, "slack_factor": 0.2, "delay_evaluation": 1},
              "parameter_space": [{"name": "lr", "expression": "choice", "values": [0.01, 0.00001, 0.000005]}]}
    p, started = start_sweep(owner_client, users["owner"], total=3, concurrent=2, config=config, epochs=16, epoch_seconds=0.3)
    page.goto(f"{page.base}/sweeps/{started['id']}/")
    page.wait_for_selector("html[data-sweep-status=completed]", timeout=120_000)
    stopped = page.locator("#trials tr[data-status=early_terminated]")
    assert stopped.count() >= 1
    assert stopped.first.locator("td.status").inner_text() == "early terminated"
    assert int(stopped.first.locator("td.num").nth(2).inner_text()) < 16  # epochs run
    assert page.locator("#trials tr.best td[data-param=lr]").inner_text() == "0.01"
    # a choice axis shows the choices themselves; the stopped trials are drawn too, with what they reached
    assert page.locator("#parallel polyline.trial-line").count() == 3
    full_shot(page, request, "early-terminated")

    # the same words wherever runs are listed: the pipeline's Runs tab, the Pipelines page, compare
    sweep = Sweep.objects.get(pk=started["id"])
    stopped_run = sweep.trials.filter(status="early_terminated").first().run_id
    best_run = sweep.best_trial.run_id
    # and the pipeline opens on the sweep's best trial, not on the trial that ended last
    page.goto(f"{page.base}/pipelines/{p.id}/")
    page.wait_for_function(f"new URLSearchParams(location.search).get('run') === '{best_run}'")
    page.wait_for_selector(f"#run-summary:has-text('Run #{best_run}: completed')")
    assert "trial 0 of sweep #" in page.inner_text("#run-summary") and ", its best" in page.inner_text("#run-summary")
    page.click("[data-tab=runs]")
    assert page.locator(f"#tab-runs tr[data-run='{stopped_run}'] td").nth(2).inner_text() == "early terminated"
    full_shot(page, request, "early-terminated-runs-tab")
    page.goto(f"{page.base}/")
    assert page.locator(f"#recent-runs tr[data-run='{stopped_run}'] td").nth(3).inner_text() == "early terminated"
    page.goto(f"{page.base}/runs/compare?runs={best_run},{stopped_run}")
    page.wait_for_selector("td.status-early_terminated:text-is('early terminated')")
    full_shot(page, request, "early-terminated-compare")
