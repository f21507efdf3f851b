"""The API tokens page in the browser: reached from the user name in the top bar, a token is made
with a name, shown once with a Copy button (the clipboard then holds it), works for a script on
the real server (no session, no CSRF), is listed by name and prefix with its last use, and once
revoked is answered 401."""
from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.timeout(120)]


def call(server, path, secret, body=None):
    """(status, JSON answer) of a script's request to the page server with the token."""
    request = urllib.request.Request(server + path, data=body and json.dumps(body).encode(), method="POST" if body else "GET",
                                     headers={"Authorization": f"Bearer {secret}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_a_user_makes_copies_uses_and_revokes_a_token(page):
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=page.base)
    page.goto(page.base + "/")
    page.click("header.topbar a.who")
    page.wait_for_selector("#no-tokens")
    assert page.url == page.base + "/account/tokens/"
    page.fill("#token-name", "nightly training")
    page.click("#create-token")
    shown = page.locator("#new-token-value")
    secret = shown.inner_text().strip()
    assert secret.startswith("pd_") and len(secret) == 46
    assert "shown this once" in page.locator("#new-token").inner_text()
    row = page.locator("#tokens tr[data-token]")
    assert row.count() == 1 and "nightly training" in row.inner_text() and secret[:10] in row.inner_text()
    assert "never" in row.locator(".last-used").inner_text()
    page.click("#copy-token")
    page.wait_for_selector("#copy-result:not(:empty)")
    assert page.locator("#copy-result").inner_text() == "Token copied to the clipboard."
    assert page.evaluate("navigator.clipboard.readText()") == secret
    box, card = shown.bounding_box(), page.locator("#new-token").bounding_box()
    assert box["x"] + box["width"] <= card["x"] + card["width"] + 1  # the token stays inside its card
    page.shot("made")

    status, made = call(page.base, "/api/pipelines", secret, {"name": "from a script"})  # a POST: no CSRF token
    assert status == 201 and made["name"] == "from a script"

    page.goto(page.base + "/account/tokens/")  # shown once: not on the page again
    page.wait_for_selector("#tokens")
    assert page.locator("#new-token").count() == 0 and secret not in page.content()
    assert "never" not in page.locator("#tokens .last-used").inner_text()
    page.shot("listed")

    page.click("#tokens button.danger")
    page.wait_for_selector("#no-tokens")
    assert "is revoked" in page.locator(".messages").inner_text()
    page.shot("revoked")
    status, refused = call(page.base, "/api/pipelines", secret)
    assert status == 401 and "revoked" in refused["error"]
