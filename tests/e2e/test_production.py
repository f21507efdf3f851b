"""The README's production recipe, followed step by step (its commands read from the README) and
used from a real browser: collectstatic, migrate, ensure_admin, daphne with DEBUG off, two Celery
workers, PostgreSQL and Redis. The page runs under the Content-Security-Policy (no bypass): any
violation, console error or page error fails the test."""
import json
import math
from urllib.parse import unquote

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from designer.pipelines.models import Pipeline, Run
from tests.conftest import TEST_DATA
from tests.e2e.conftest import shot_dir
from tests.e2e.helpers import node, saved
from tests.machine import patience
from tests.pipes import fan_out, out_path
from tests.production import STATIC_ROOT, Daphne, Maintenance, manage, production_worker, recipe
from tests.serving import helpers as serving_helpers
from tests.workers import stop_all

pytestmark = [
    pytest.mark.production,
    pytest.mark.browser,
    pytest.mark.skipif(not (settings.DATABASES["default"]["ENGINE"].endswith("postgresql") and settings.CELERY_BROKER_URL.startswith("redis")),
                       reason="the production recipe runs on PostgreSQL and Redis (make test's production pass)"),
]
PASSWORD = "a-long-enough-password-1"
SCRIPTS = ("js/main.js", "vendor/htmx.org/dist/htmx.min.js", "vendor/@antv/x6/dist/x6.min.js",
           "vendor/@dagrejs/dagre/dist/dagre.min.js", "vendor/chart.js/dist/chart.umd.min.js", "css/app.css")
DEBUG_PAGE = ("Traceback", "DEBUG = True", "URLconf", "CELERY_BROKER_URL", "redis://", "postgres://")


@pytest.fixture(scope="module")
def site(django_db_setup, django_db_blocker):
    """README, "Production recipe": its manage.py steps, daphne, two workers and the maintenance
    process, all with DEBUG off."""
    steps = recipe("manage.py")
    assert [s[1] for s in steps] == ["collectstatic", "migrate", "ensure_admin", "maintenance"], steps
    for step in steps[:-1]:
        done = manage(*step[1:])
        assert done.returncode == 0, done.stderr
    web = Daphne("production")
    workers = [production_worker("prod-a"), production_worker("prod-b")]
    maintenance = Maintenance(steps[-1])
    try:
        web.wait_ready()
        with django_db_blocker.unblock():
            for w in workers:
                w.wait_ready()
        assert maintenance.proc.poll() is None, maintenance.log_path.read_text()[-2000:]
        yield web, workers
    finally:
        web.stop()
        stop_all(workers)
        maintenance.stop()


@pytest.fixture
def watched(browser, request):
    """A browser context under the site's policy, and everything the page reports."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    context.add_init_script("window.__csp = []; document.addEventListener('securitypolicyviolation', "
                            "e => window.__csp.push(`${e.violatedDirective} ${e.blockedURI}`))")
    page = context.new_page()
    page.set_default_timeout(patience(15_000))
    page.errors, page.static = [], []
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    page.on("console", lambda m: page.errors.append(m.text) if m.type == "error" else None)
    page.on("response", lambda r: page.static.append((unquote(r.url.split("/static/", 1)[1]), r.status, r.headers.get("cache-control")))
            if "/static/" in r.url else None)
    page.shot = lambda name: page.screenshot(path=str(shot_dir(request) / f"{name}.png"))
    yield page
    context.close()


def test_the_production_recipe_serves_a_designer_that_runs_a_pipeline(site, watched, transactional_db, tmp_path):
    web, workers = site
    page = watched
    hold = tmp_path / "hold"  # the branches run on only once the page has shown them all running at once
    hold.touch()
    get_user_model().objects.create_user("owner", password=PASSWORD)

    # an anonymous visitor's 404 lists no URL (no debug page)
    r = page.context.request.get(web.url + "/no-such-page")
    assert r.status == 404 and not any(leak in r.text() for leak in DEBUG_PAGE), r.text()
    assert "api/" not in r.text()

    # sign in through the page (django-axes checks it), then open a pipeline of toy modules
    page.goto(web.url + "/accounts/login/")
    page.fill("input[name=username]", "owner")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(web.url + "/")
    p = Pipeline.objects.create(owner=get_user_model().objects.get(username="owner"), name="toy pipeline", draft=fan_out(hold, 4, name="toy pipeline"))
    answer = page.goto(f"{web.url}/pipelines/{p.id}/")
    page.wait_for_selector("html[data-designer-ready=true]")
    policy = answer.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "unsafe-eval" not in policy.split("script-src")[1].split(";")[0]
    assert answer.headers["x-frame-options"] == "DENY"
    # every script and the stylesheet come from STATIC_ROOT through WhiteNoise
    served = {path: (status, cache) for path, status, cache in page.static}
    for script in SCRIPTS:
        assert served.get(script, (None,))[0] == 200, (script, served)
        assert served[script][1] == "max-age=60, public"  # WhiteNoise's header, not Django's
        assert (STATIC_ROOT / script).is_file()
    page.shot("designer")

    # a parameter set in the pane (an htmx fragment) is saved, then the pipeline is submitted
    page.base = web.url
    box = node(page, "b4").bounding_box()
    page.mouse.click(box["x"] + 60, box["y"] + 15)
    page.wait_for_selector("#node-form[data-node=b4]")
    page.fill("#param-amount", "7")
    page.press("#param-amount", "Enter")  # the form is not sent (no inline handler under the policy)
    assert saved(page).draft["nodes"][4]["parameters"]["amount"] == 7
    page.click("#submit")
    branches = ("b1", "b2", "b3", "b4")
    for nid in branches:
        # two workers of two slots: a busy worker reserves no more (designer/celery.py, FreeSlotsOnly),
        # so the four start at once, with no wait for the outbox to send one held back again
        try:
            page.wait_for_selector(f'#canvas g[data-cell-id="{nid}"] [data-status="running"]', timeout=patience(60_000))
        except PlaywrightTimeout:
            nodes = Run.objects.get().nodes.values_list("node_id", "status", "worker__hostname", "send_attempts")
            raise AssertionError(f"{nid} not shown running; the nodes (status, worker, messages sent): {list(nodes)}") from None
    page.shot("running")
    hold.unlink()
    page.wait_for_selector("#run-banner[data-status=completed]", timeout=patience(90_000))
    for nid in ("src", *branches):
        assert node(page, nid).locator("[data-status]").get_attribute("data-status") == "completed"
    page.shot("completed")

    run = Run.objects.get()
    nodes = {nr.node_id: nr for nr in run.nodes.all()}
    # four at once on two workers of the recipe's two processes each: both workers ran two
    hosts = [nodes[nid].worker.hostname for nid in branches]
    assert sorted(hosts) == sorted(w.hostname for w in workers for _ in range(2)), hosts
    assert (out_path(nodes["b4"].outputs["out"]) / "value.txt").read_text() == "17"

    # a NaN parameter is a JSON 400 naming it, never a debug page
    csrf = next(c["value"] for c in page.context.cookies() if c["name"] == "csrftoken")
    draft = json.loads(json.dumps(p.draft))
    draft["nodes"][4]["parameters"]["amount"] = math.nan
    r = page.context.request.put(f"{web.url}/api/pipelines/{p.id}", data=json.dumps({"revision": Pipeline.objects.get(pk=p.id).revision, "draft": draft}),
                                 headers={"Content-Type": "application/json", "X-CSRFToken": csrf, "Referer": web.url + "/"})
    assert not any(leak in r.text() for leak in DEBUG_PAGE), r.text()[:500]
    assert r.status == 400 and r.headers["content-type"] == "application/json", (r.status, r.text()[:500])
    assert "amount" in r.text()

    assert page.evaluate("window.__csp") == []
    assert page.errors == []


def test_repeated_wrong_passwords_lock_the_sign_in_page_which_says_for_how_long(site, watched, transactional_db):
    web, _ = site
    page = watched
    get_user_model().objects.create_user("someone", password=PASSWORD)
    page.goto(web.url + "/accounts/login/")
    for i in range(settings.AXES_FAILURE_LIMIT):
        page.fill("input[name=username]", "someone")
        page.fill("input[name=password]", f"wrong-{i}")
        with page.expect_navigation():
            page.click("button[type=submit]")
        if i == 0:
            assert f"After {settings.AXES_FAILURE_LIMIT} wrong passwords in a row" in page.inner_text("main")
            page.shot("wrong-password")
    text = page.inner_text("#locked-out")
    assert f"signing in is locked for {settings.AXES_COOLOFF_MINUTES} minutes" in text and "someone" in text
    page.shot("locked")
    # the right password does not get through while the lock holds
    page.goto(web.url + "/accounts/login/")
    page.fill("input[name=username]", "someone")
    page.fill("input[name=password]", PASSWORD)
    with page.expect_navigation():
        page.click("button[type=submit]")
    assert page.locator("#locked-out").count() == 1
    assert page.evaluate("window.__csp") == []
    # the lock-out answers 429, which the browser reports in the console; nothing else may be there
    assert [e for e in page.errors if "status of 429" not in e] == []


def test_the_production_recipe_serves_endpoints_from_two_replicas(site, watched, transactional_db, tmp_path):
    """README's serving command with two replicas on one port, DEBUG off, PostgreSQL: an endpoint's
    page under the policy shows it healthy on both, and a scoring request with its key is answered."""
    web, _ = site
    page = watched
    owner = get_user_model().objects.create_user("owner", password=PASSWORD)
    endpoint = serving_helpers.deploy(serving_helpers.register(owner, serving_helpers.Model(tmp_path, seed=1), "pets"), "pets")
    serving = serving_helpers.Serving(TEST_DATA, replicas=2).wait_up()
    try:
        assert len(serving.replicas(endpoint, 2)) == 2
        page.goto(web.url + "/accounts/login/")
        page.fill("input[name=username]", "owner")
        page.fill("input[name=password]", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_url(web.url + "/")
        page.goto(f"{web.url}/endpoints/pets/")
        page.locator("#status-message", has_text="serving version 1 on 2 serving processes").wait_for(timeout=30_000)
        assert page.inner_text("#endpoint-status") == "healthy"
        body, content_type = serving_helpers.multipart([("image", "a.png", serving_helpers.png())])
        status, answer, headers = serving_helpers.request(serving_helpers.score_url(serving, endpoint), body, content_type,
                                                          key=endpoint.primary_key)
        assert status == 200 and answer["classes"] == serving_helpers.CLASSES, answer
        assert serving_helpers.request(serving_helpers.score_url(serving, endpoint), body, content_type, key="wrong")[0] == 401
        page.locator("#stat-requests", has_text="2").wait_for(timeout=30_000)  # the page reads the figures again
        assert page.inner_text("#stat-errors") == "1" and page.inner_text("#stat-p50").endswith("ms")
        page.shot("endpoint")
        assert page.evaluate("window.__csp") == [] and page.errors == []
    finally:
        serving.stop()
