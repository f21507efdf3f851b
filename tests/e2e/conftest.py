"""Browser tests: a real daphne (HTTP + websockets) on the test database, driven by Debian's
chromium through Playwright. Each test gets a fresh page signed in as `owner`."""
import os
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.machine import patience
from tests.servers import Daphne

try:
    from tests.workers import worker_database_url
except ImportError:  # before the worker helpers moved out of conftest
    from tests.conftest import worker_database_url

# Playwright's sync API keeps an event loop running in this thread; the ORM calls of a test are
# still plain synchronous calls.
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--disable-dev-shm-usage"]
RESULTS = ROOT / "test-results"
# the page server also knows a distributed toy module (Run settings are shown only for those)
SERVER_MODULES = "tests.toy_modules,tests.e2e.toy_distributed"
# the page server's dataset upload limit: small, so that a test can go over it in a moment
UPLOAD_LIMIT_MB = 4


class Server(Daphne):
    """The page server: the test database, DEBUG on, the toy modules, a small upload limit, and the
    broker and channel layer of the environment (CELERY_BROKER_URL, CHANNEL_LAYER_URL: Redis in the
    production pass), as the workers of the tests use."""

    def __init__(self, port: int | None = None):
        super().__init__({**os.environ, "DATABASE_URL": worker_database_url(), "DEBUG": "true",
                          "DESIGNER_EXTRA_MODULES": SERVER_MODULES, "DATASET_MAX_UPLOAD_MB": str(UPLOAD_LIMIT_MB)}, port=port)


@pytest.fixture(scope="session")
def server(django_db_setup, django_db_blocker):
    s = Server().wait_ready()
    yield s
    s.stop()


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


def sign_in(context, server, user):
    from django.test import Client

    c = Client()
    c.force_login(user)
    context.add_cookies([{"name": "sessionid", "value": c.cookies["sessionid"].value, "url": server.url}])


@pytest.fixture
def page(request, browser, server, users, transactional_db):
    """A page signed in as owner. Console errors of the page fail the test. Playwright's
    wait_for_function evaluates its condition with eval, which the Content-Security-Policy forbids:
    these pages bypass it; tests/e2e/test_production.py drives the page under it."""
    context = browser.new_context(viewport={"width": 1400, "height": 900}, accept_downloads=True, bypass_csp=True)
    sign_in(context, server, users["owner"])
    pg = context.new_page()
    pg.set_default_timeout(patience(10_000))  # longer on a slower machine (tests/machine.py)
    errors = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    # refusals the page shows to the user (a bad value, a stale tab, an oversized upload) are not errors
    # and a test may expect others, of the addresses it names (a deleted run's: `pg.expected_errors.append(url)`)
    pg.expected_errors = []
    pg.on("console", lambda m: errors.append(m.text) if m.type == "error" and not any(c in m.text for c in ("400", "409", "413"))
          and not any(url in (m.location or {}).get("url", "") for url in pg.expected_errors) else None)
    pg.base = server.url
    pg.shot = lambda name: pg.screenshot(path=str(shot_dir(request) / f"{name}.png"))
    yield pg
    pg.screenshot(path=str(shot_dir(request) / "last.png"))
    context.close()
    assert not errors, f"the page reported errors: {errors}"


def shot_dir(request) -> Path:
    d = RESULTS / request.node.name
    d.mkdir(parents=True, exist_ok=True)
    return d
