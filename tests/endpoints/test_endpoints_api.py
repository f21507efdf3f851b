"""Endpoints API: deploy a version under a name, switch versions, regenerate keys, what the page
reads (status from the serving processes' heartbeats, figures added up over replicas), and the
refusals: a taken or bad name, a failed version, deleting a version in use, strangers."""
from __future__ import annotations

import pytest
from django.utils import timezone

from designer.engine import latency
from designer.pipelines.models import Endpoint, EndpointError, EndpointStats, ModelVersion, RegisteredModel, ServingReplica

pytestmark = pytest.mark.django_db


@pytest.fixture
def versions(users):
    m = RegisteredModel.objects.create(owner=users["owner"], name="Digits_Net")
    return [ModelVersion.objects.create(model=m, version=n, folder=f"models/{users['owner'].id}/{m.id}/{n}", status=s,
                                        error="torch.export failed" if s == "failed" else "")
            for n, s in ((1, "ready"), (2, "ready"), (3, "failed"))]


def deploy(client, **body):
    return client.post("/api/endpoints", body, content_type="application/json")


def test_deploying_names_it_after_the_model_with_two_keys_and_a_curl_example(owner_client, versions):
    r = deploy(owner_client, model="Digits_Net", version=1)
    assert r.status_code == 201, r.json()
    e = r.json()
    assert (e["name"], e["model"], e["version"], e["versions"]) == ("digits-net", "Digits_Net", 1, [1, 2])
    assert e["scoring_url"].endswith("/api/endpoints/digits-net/score") and len(e["keys"]["primary"]) >= 40
    assert e["keys"]["primary"] != e["keys"]["secondary"]
    assert f"Authorization: Bearer {e['keys']['primary']}" in e["curl"] and e["scoring_url"] in e["curl"]
    assert e["status"] == "unavailable" and "python -m designer.serving" in e["status_message"]
    assert deploy(owner_client, model="Digits_Net", version=2).json()["name"] == "digits-net-2"  # the next free name


def test_switching_regenerating_and_deleting(owner_client, versions):
    deploy(owner_client, model="Digits_Net", version=1, name="digits")
    revision = Endpoint.objects.get(name="digits").revision
    r = owner_client.patch("/api/endpoints/digits", {"version": 2}, content_type="application/json")
    assert r.status_code == 200 and r.json()["version"] == 2 and Endpoint.objects.get(name="digits").revision == revision + 1
    r = owner_client.patch("/api/endpoints/digits", {"version": 3}, content_type="application/json")
    assert r.status_code == 400 and r.json()["error"] == "Digits_Net:3 cannot be served: torch.export failed"
    old = r = owner_client.get("/api/endpoints/digits").json()["keys"]
    new = owner_client.post("/api/endpoints/digits/keys", {"key": "secondary"}, content_type="application/json").json()["keys"]
    assert new["primary"] == old["primary"] and new["secondary"] != old["secondary"]
    r = owner_client.post("/api/endpoints/digits/keys", {"key": "third"}, content_type="application/json")
    assert r.status_code == 400 and "primary, secondary" in r.json()["error"]
    r = owner_client.delete("/api/models/Digits_Net/versions/2")
    assert r.status_code == 409 and r.json()["error"] == ("Digits_Net:2 is served by endpoint 'digits': "
                                                          "switch or delete the endpoint first")
    assert owner_client.delete("/api/endpoints/digits").status_code == 204
    assert owner_client.delete("/api/models/Digits_Net/versions/2").status_code == 204


@pytest.mark.parametrize("body, status, error", [
    ({"model": "Digits_Net", "version": 1, "name": "Has Space"}, 400, "endpoint name 'Has Space' is not usable"),
    ({"model": "Digits_Net", "version": 9}, 404, "you have no model 'Digits_Net' version 9"),
    ({"model": "Other", "version": 1}, 404, "you have no model 'Other' version 1"),
    ({"model": "Digits_Net", "version": 3}, 400, "Digits_Net:3 cannot be served: torch.export failed"),
    ({"model": "Digits_Net"}, 400, "send {\"model\""),
])
def test_bad_deployments_are_refused_by_name(owner_client, versions, body, status, error):
    r = deploy(owner_client, **body)
    assert r.status_code == status and error in r.json()["error"], r.json()


def test_a_name_is_global_and_strangers_see_nothing(owner_client, stranger_client, users, versions):
    deploy(owner_client, model="Digits_Net", version=1, name="digits")
    other = RegisteredModel.objects.create(owner=users["stranger"], name="theirs")
    ModelVersion.objects.create(model=other, version=1, folder="models/x/1/1", status="ready")
    r = deploy(stranger_client, model="theirs", version=1, name="digits")
    assert r.status_code == 409 and r.json()["error"] == "the endpoint name 'digits' is taken: choose another"
    assert deploy(stranger_client, model="Digits_Net", version=1).status_code == 404
    for method, url in (("get", "/api/endpoints/digits"), ("delete", "/api/endpoints/digits"),
                        ("post", "/api/endpoints/digits/keys")):
        assert getattr(stranger_client, method)(url).status_code == 404, url
    assert stranger_client.get("/api/endpoints").json()["endpoints"] == []


def test_status_and_figures_come_from_the_serving_processes(owner_client, versions):
    deploy(owner_client, model="Digits_Net", version=1, name="digits")
    endpoint = Endpoint.objects.get(name="digits")
    now = timezone.now()
    ServingReplica.objects.create(name="m:1", last_seen=now, loaded={"digits": {"version": versions[0].id, "revision": 1}})
    ServingReplica.objects.create(name="m:2", last_seen=now, loaded={"digits": {"version": versions[0].id, "revision": 1}})
    ServingReplica.objects.create(name="gone:3", last_seen=now - timezone.timedelta(minutes=5), loaded={})
    for replica, ms in (("m:1", [10.0] * 90), ("m:2", [100.0] * 10)):
        histogram = latency.empty()
        for x in ms:
            latency.add(histogram, x)
        EndpointStats.objects.create(endpoint=endpoint, replica=replica, requests=len(ms), errors=1, latency=histogram)
    EndpointError.objects.create(endpoint=endpoint, at=now, status=400, message="image 1 (x.txt): not an image")
    e = owner_client.get("/api/endpoints/digits").json()
    assert (e["status"], e["status_message"]) == ("healthy", "serving version 1 on 2 serving processes")
    assert e["stats"]["requests"] == 100 and e["stats"]["errors"] == 2
    assert e["stats"]["p50_ms"] == pytest.approx(10, rel=0.05) and e["stats"]["p95_ms"] == pytest.approx(100, rel=0.05)
    assert e["recent_errors"][0]["message"] == "image 1 (x.txt): not an image"
    owner_client.patch("/api/endpoints/digits", {"version": 2}, content_type="application/json")
    e = owner_client.get("/api/endpoints/digits").json()
    assert e["status"] == "healthy" and e["status_message"] == "switching to version 2: loaded by 0 of 2 serving processes; meanwhile version 1 answers"


def test_the_web_app_sends_scoring_requests_to_the_serving_process(client, versions):
    r = client.post("/api/endpoints/digits/score", b"{}", content_type="application/json")
    assert r.status_code == 307 and r["Location"].endswith("/api/endpoints/digits/score")
    assert r.json()["scoring_url"] == r["Location"]


def test_a_long_model_name_gives_an_endpoint_name_cut_at_a_word():
    from designer.pipelines.endpoints.service import default_name

    assert default_name("Digits ResNet-18 from scratch") == "digits-resnet-18-from"
    assert default_name("a" * 40) == "a" * 28  # one word: cut where it must be
    assert default_name("123 models") == "model-123-models"
