"""Personal API tokens: `Authorization: Bearer pd_...` stands for its owner on every /api/ URL, with
no session and no CSRF token; a wrong, revoked or malformed token is answered 401 JSON; only the
token's sha256 is stored; the page makes, shows once, lists and revokes tokens."""
import json
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.utils import timezone

from designer.pipelines.accounts import tokens
from designer.pipelines.models import ApiToken, Pipeline, Run
from tests.conftest import ROOT
from tests.datasets.test_datasets_api import image_zip
from tests.pipes import chain
from tests.runs.test_api import broker_queue  # noqa: F401 - a fixture: submits without a worker

pytestmark = pytest.mark.django_db


@pytest.fixture
def script():
    """A client as a script is: no session, and CSRF checked as it is for a browser."""
    return Client(enforce_csrf_checks=True)


def bearer(secret):
    return {"HTTP_AUTHORIZATION": f"Bearer {secret}"}


def _zip():
    return SimpleUploadedFile("pets.zip", image_zip())


def made(user, name="ci"):
    return tokens.create(user, name)[1]


def test_a_token_works_on_the_api_without_a_session_or_csrf(script, users, broker_queue):  # noqa: F811
    secret = made(users["owner"])
    auth = bearer(secret)
    assert script.get("/api/pipelines", **auth).json() == {"pipelines": []}
    r = script.post("/api/pipelines", json.dumps({"name": "scripted", "draft": chain(2)}), content_type="application/json", **auth)
    assert r.status_code == 201, r.content
    p = r.json()
    assert Pipeline.objects.get(pk=p["id"]).owner == users["owner"]
    upload = script.post("/api/datasets", {"file": _zip(), "name": "pets"}, **auth)
    assert upload.status_code == 201, upload.content
    assert [d["name"] for d in script.get("/api/datasets", **auth).json()["datasets"]] == ["pets"]
    submitted = script.post(f"/api/pipelines/{p['id']}/runs", **auth)
    assert submitted.status_code == 201, submitted.content
    status = script.get(f"/api/runs/{submitted.json()['id']}", **auth).json()
    assert status["status"] in ("queued", "running") and status["submitted_by"] == "owner"
    assert "sessionid" not in script.cookies  # nothing signed the script in


def test_without_a_token_the_same_post_still_needs_csrf(users):
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(users["owner"])
    r = browser.post("/api/pipelines", json.dumps({"name": "x"}), content_type="application/json")
    assert r.status_code == 403 and "CSRF" in r.json()["error"]
    assert browser.get("/api/pipelines").status_code == 200  # a session request is unchanged


@pytest.mark.parametrize("header, says", [
    ("Bearer pd_" + "x" * 43, "not valid"),  # the right shape, no such token
    ("Bearer pd_short", "malformed"),
    ("Bearer ", "malformed"),
    ("Bearer not-a-token-at-all", "malformed"),
    ("Token pd_" + "x" * 43, "Bearer"),
    ("Basic b3duZXI6c2VjcmV0", "Bearer"),
])
def test_a_wrong_or_malformed_token_is_answered_401_json(script, users, header, says):
    for method, url in (("get", "/api/pipelines"), ("post", "/api/pipelines"), ("get", "/api/nowhere")):
        r = getattr(script, method)(url, HTTP_AUTHORIZATION=header)
        assert r.status_code == 401 and r["Content-Type"] == "application/json", (url, r.content)
        assert says in r.json()["error"] and r["WWW-Authenticate"].startswith("Bearer")
    assert not Pipeline.objects.exists()


def test_a_bad_token_is_refused_even_with_a_valid_session(owner_client):
    r = owner_client.get("/api/pipelines", HTTP_AUTHORIZATION="Bearer pd_" + "y" * 43)
    assert r.status_code == 401 and "not valid" in r.json()["error"]


def test_a_revoked_token_is_answered_401_and_says_so(script, owner_client, users):
    secret = made(users["owner"], "laptop")
    assert script.get("/api/runs", **bearer(secret)).status_code == 200
    token_id = ApiToken.objects.get().id
    assert owner_client.delete(f"/api/tokens/{token_id}").status_code == 204
    r = script.get("/api/runs", **bearer(secret))
    assert r.status_code == 401 and "revoked" in r.json()["error"] and "laptop" in r.json()["error"]
    assert owner_client.get("/api/tokens").json()["tokens"] == []


def test_a_token_sees_only_its_owners_things(script, users, owner_client):
    p = Pipeline.objects.create(owner=users["owner"], name="mine", draft=chain(2))
    run = Run.objects.create(owner=users["owner"], pipeline=p, name="mine", snapshot=chain(2))
    stranger = bearer(made(users["stranger"]))
    assert script.get(f"/api/pipelines/{p.id}", **stranger).status_code == 404
    assert script.get(f"/api/runs/{run.id}", **stranger).status_code == 404
    assert script.post(f"/api/pipelines/{p.id}/runs", **stranger).status_code == 404
    assert script.delete(f"/api/pipelines/{p.id}", **stranger).status_code == 404
    assert script.get("/api/pipelines", **stranger).json() == {"pipelines": []}
    owner_token = ApiToken.objects.create(owner=users["owner"], name="o", prefix="pd_x", digest="0" * 64)
    assert script.delete(f"/api/tokens/{owner_token.id}", **stranger).status_code == 403  # a token revokes none
    assert ApiToken.objects.get(pk=owner_token.id).revoked_at is None
    assert Pipeline.objects.filter(pk=p.id).exists()


def test_a_stranger_cannot_revoke_someone_elses_token(stranger_client, users):
    made(users["owner"])
    token = ApiToken.objects.get()
    assert stranger_client.delete(f"/api/tokens/{token.id}").status_code == 404
    assert ApiToken.objects.get().revoked_at is None


def test_the_secret_is_not_stored_only_its_sha256(users):
    token, secret = tokens.create(users["owner"], "ci")
    assert re.fullmatch(r"pd_[A-Za-z0-9_-]{43}", secret)
    row = ApiToken.objects.filter(pk=token.pk).values().get()
    assert not any(secret in str(v) or secret[3:] in str(v) for v in row.values())
    assert row["digest"] == tokens.digest(secret) and row["prefix"] == secret[:10]
    assert tokens.create(users["owner"], "ci")[1] != secret  # two tokens of one name differ


def test_last_used_is_noted_at_most_once_a_minute(script, users):
    secret = made(users["owner"])
    assert ApiToken.objects.get().last_used_at is None
    script.get("/api/pipelines", **bearer(secret))
    first = ApiToken.objects.get().last_used_at
    assert first is not None and (timezone.now() - first).total_seconds() < 60
    script.get("/api/pipelines", **bearer(secret))
    assert ApiToken.objects.get().last_used_at == first  # within the minute: no write
    ApiToken.objects.update(last_used_at=first - tokens.LAST_USED_EVERY)
    script.get("/api/pipelines", **bearer(secret))
    assert ApiToken.objects.get().last_used_at > first


def test_the_api_makes_lists_and_revokes_tokens_from_a_session(owner_client, stranger_client, script):
    r = owner_client.post("/api/tokens", {"name": "nightly job"}, content_type="application/json")
    assert r.status_code == 201
    made_now = r.json()
    assert made_now["token"].startswith(made_now["prefix"]) and made_now["last_used_at"] is None
    listed = owner_client.get("/api/tokens").json()["tokens"]
    assert [t["name"] for t in listed] == ["nightly job"] and "token" not in listed[0]
    assert stranger_client.get("/api/tokens").json()["tokens"] == []
    auth = bearer(made_now["token"])
    assert [t["id"] for t in script.get("/api/tokens", **auth).json()["tokens"]] == [made_now["id"]]
    refused = script.post("/api/tokens", {"name": "more"}, content_type="application/json", **auth)
    assert refused.status_code == 403 and "cannot make or revoke" in refused.json()["error"]
    assert script.delete(f"/api/tokens/{made_now['id']}", **auth).status_code == 403
    assert owner_client.post("/api/tokens", {"name": "  "}, content_type="application/json").status_code == 400
    assert owner_client.delete(f"/api/tokens/{made_now['id']}").status_code == 204
    assert owner_client.delete(f"/api/tokens/{made_now['id']}").status_code == 404
    assert ApiToken.objects.count() == 1


def test_the_scoring_url_keeps_its_endpoint_key(script):
    """Its Bearer key is an endpoint's, checked by the serving process: not taken for an API token."""
    r = script.post("/api/endpoints/digits/score", b"x", content_type="image/png", HTTP_AUTHORIZATION="Bearer some-endpoint-key")
    assert r.status_code == 307


def test_the_page_makes_a_token_shows_it_once_and_revokes_it(owner_client, users):
    page = owner_client.get("/account/tokens/")
    assert page.status_code == 200 and b"You have no API token" in page.content
    assert b'href="/account/tokens/"' in page.content  # the user name in the top bar leads here
    made_page = owner_client.post("/account/tokens/", {"name": "laptop"})
    secret = re.search(rb'id="new-token-value" class="key">(pd_[^<]+)<', made_page.content)[1].decode()
    assert tokens.authenticate(secret).owner == users["owner"]
    again = owner_client.get("/account/tokens/")
    assert secret.encode() not in again.content and b"laptop" in again.content and secret[:10].encode() in again.content
    assert owner_client.post("/account/tokens/", {"name": ""}).status_code == 400
    token = ApiToken.objects.get()
    revoked = owner_client.post(f"/account/tokens/{token.id}/revoke", follow=True)
    assert b"is revoked" in revoked.content and b"You have no API token" in revoked.content
    with pytest.raises(tokens.Refused, match="revoked"):
        tokens.authenticate(secret)


def test_the_page_sent_again_by_a_reload_makes_no_second_token_and_says_so(owner_client, users):
    page = owner_client.get("/account/tokens/").content.decode()
    form_id = re.search(r'name="form_id" value="([0-9a-f]{32})"', page)[1]
    made = owner_client.post("/account/tokens/", {"name": "laptop", "form_id": form_id})
    assert made.status_code == 200 and b'id="new-token-value"' in made.content
    again = owner_client.post("/account/tokens/", {"name": "laptop", "form_id": form_id})  # the browser's resend
    assert again.status_code == 409 and b'id="new-token-value"' not in again.content
    assert "This form was sent already: the token “laptop” was made then" in again.content.decode()
    assert ApiToken.objects.filter(owner=users["owner"]).count() == 1
    # a new form (the page as it is now) makes another
    fresh = re.search(r'name="form_id" value="([0-9a-f]{32})"', again.content.decode())[1]
    assert fresh != form_id and owner_client.post("/account/tokens/", {"name": "ci", "form_id": fresh}).status_code == 200
    assert ApiToken.objects.filter(owner=users["owner"]).count() == 2


def test_a_stranger_cannot_revoke_a_token_from_the_page(stranger_client, users):
    made(users["owner"])
    token = ApiToken.objects.get()
    r = stranger_client.post(f"/account/tokens/{token.id}/revoke", follow=True)
    assert b"no such token" in r.content and ApiToken.objects.get().revoked_at is None


def readme_pipeline() -> str:
    section = (ROOT / "docs" / "how-to" / "api-tokens.md").read_text()
    return section[section.index("```json\n") + len("```json\n"):section.index("```\n", section.index("```json"))]


def test_the_readmes_pipeline_file_imports_and_submits_with_a_token(script, users, broker_queue):  # noqa: F811
    """The README's example: a dataset uploaded, the file imported (valid as written, run_settings
    included) and submitted with a parameter value, all with the token."""
    auth = bearer(made(users["owner"]))
    dataset = script.post("/api/datasets", {"file": _zip(), "name": "digits"}, **auth).json()["id"]
    text = readme_pipeline().replace('"dataset": 3', f'"dataset": {dataset}')
    r = script.post("/api/pipelines/import", text, content_type="application/json", **auth)
    assert r.status_code == 201, r.content
    p = r.json()
    train = next(n for n in p["draft"]["nodes"] if n["id"] == "train")
    assert train["run_settings"] == {"node_count": 1, "process_count_per_node": 2} and train["bindings"] == {"epochs": "epochs"}
    run = script.post(f"/api/pipelines/{p['id']}/runs", json.dumps({"parameters": {"epochs": 3}}),
                      content_type="application/json", **auth)
    assert run.status_code == 201, run.content
    assert run.json()["parameters"] == {"epochs": 3}
