"""Production settings refuse what is unsafe and pass Django's deployment checks, each in a fresh
`manage.py` process with the README's variables."""
import os
import secrets
import stat
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

from tests.conftest import ROOT

POSTGRES = "postgres://designer@127.0.0.1:5432/designer"  # read, never connected to, by these commands
# the README's production variables
PRODUCTION = {"DEBUG": "false", "SECRET_KEY": secrets.token_urlsafe(50), "ALLOWED_HOSTS": "designer.example.org",
              "DATABASE_URL": POSTGRES, "CELERY_BROKER_URL": "redis://127.0.0.1:6379/0",
              "CHANNEL_LAYER_URL": "redis://127.0.0.1:6379/1", "SECURE_HTTPS": "true"}


def manage(*args, unset=(), **env):
    full = {**os.environ, **env}
    # (the browser tests' conftest allows async-unsafe calls in this process: not in a deployment)
    for name in ("DEBUG", "SECRET_KEY", "SECURE_HTTPS", "DJANGO_ALLOW_ASYNC_UNSAFE", *unset):
        if name not in env:
            full.pop(name, None)
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=full, capture_output=True, text=True, timeout=120)


def shows(expression: str, **env) -> str:
    r = manage("shell", "-c", f"from django.conf import settings; print({expression})", **env)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip().splitlines()[-1]  # after what the shell says it imported


def test_debug_is_off_unless_asked_for():
    assert shows("settings.DEBUG", SECRET_KEY=PRODUCTION["SECRET_KEY"]) == "False"
    assert shows("settings.DEBUG", DEBUG="true") == "True"


def test_it_refuses_to_start_in_production_without_a_secret_key():
    r = manage("check", **{**PRODUCTION, "SECRET_KEY": ""})
    assert r.returncode != 0
    assert "ImproperlyConfigured: SECRET_KEY is not set: with DEBUG off (production)" in r.stderr
    r = manage("check", unset=["SECRET_KEY"], **{k: v for k, v in PRODUCTION.items() if k != "SECRET_KEY"})
    assert r.returncode != 0 and "SECRET_KEY is not set" in r.stderr


def test_it_refuses_a_weak_secret_key_in_production():
    for weak in ("changeme", "django-insecure-" + "x1y2z3" * 10, "ab" * 40):
        r = manage("check", **{**PRODUCTION, "SECRET_KEY": weak})
        assert r.returncode != 0 and "SECRET_KEY is too weak for production" in r.stderr, weak


def test_the_embedded_setup_keeps_a_key_of_its_own_without_debug(tmp_path):
    """One machine, SQLite: every process reads the same generated key, readable by its owner only."""
    data = tmp_path / "data"
    env = {"DESIGNER_DATA_DIR": str(data), "DATABASE_URL": f"sqlite:///{data / 'x.sqlite3'}"}
    first = shows("settings.SECRET_KEY", **env)
    assert len(first) >= 50 and first == shows("settings.SECRET_KEY", **env)
    assert stat.S_IMODE((data / "secret_key").stat().st_mode) == 0o600


def test_check_deploy_is_clean_with_the_documented_production_variables():
    r = manage("check", "--deploy", "--fail-level", "WARNING", **PRODUCTION)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "System check identified no issues" in r.stdout
    values = shows("settings.SESSION_COOKIE_SECURE, settings.CSRF_COOKIE_SECURE, settings.SECURE_SSL_REDIRECT, "
                   "settings.SECURE_HSTS_SECONDS, settings.CONTENT_SECURITY_POLICY['DIRECTIVES']['script-src']", **PRODUCTION)
    assert values == "True True True 31536000 [\"'self'\"]"


def test_without_https_check_deploy_names_what_https_would_add():
    r = manage("check", "--deploy", **{**PRODUCTION, "SECURE_HTTPS": "false"})
    for warning in ("security.W004", "security.W008", "security.W012", "security.W016"):
        assert warning in r.stderr, r.stderr


def test_a_server_started_without_debug_answers_an_anonymous_404_without_listing_urls(db):
    from tests.production import Daphne

    web = Daphne("no-debug", DEBUG=None)  # DEBUG not set at all
    try:
        web.wait_ready()
        with pytest.raises(urllib.error.HTTPError) as answer:
            urllib.request.urlopen(web.url + "/no-such-page", timeout=30)
        page = answer.value.read().decode()
    finally:
        web.stop()
    assert answer.value.code == 404
    assert "Not Found" in page and "URLconf" not in page and "api/" not in page and "admin/" not in page


def test_collectstatic_gathers_the_page_scripts_only_from_node_modules(tmp_path):
    r = manage("collectstatic", "--noinput", STATIC_ROOT=str(tmp_path / "static"), **PRODUCTION)
    assert r.returncode == 0, r.stderr
    collected = tmp_path / "static"
    for script in ("js/main.js", "vendor/htmx.org/dist/htmx.min.js", "vendor/@antv/x6/dist/x6.min.js",
                   "vendor/@dagrejs/dagre/dist/dagre.min.js", "vendor/chart.js/dist/chart.umd.min.js"):
        assert (collected / script).is_file() and (collected / (script + ".gz")).is_file(), script
    vendor = [p for p in (collected / "vendor").rglob("*") if p.is_file() and not p.name.endswith(".gz")]
    assert len(vendor) < 300  # node_modules holds over 3,000 files


def test_one_setting_bounds_a_request_body_for_daphne_and_for_django_alike():
    """Raising REQUEST_MAX_BODY_MB raises Django's own limit too (else a body between the two got a bare 400)."""
    assert shows("settings.DATA_UPLOAD_MAX_MEMORY_SIZE", DEBUG="true", REQUEST_MAX_BODY_MB="64") == str(64 * 1024 * 1024)
