"""The JSON API, as the page and scripts use it: ownership, revisions, validation, runs, logs."""
import json
import re

import pytest

from designer.pipelines.models import Pipeline, Run
from designer.pipelines.runs import service as runs
from tests.pipes import chain, link, node, pipeline, two_branches

pytestmark = pytest.mark.django_db


def create(client, draft=None, name="p"):
    r = client.post("/api/pipelines", {"name": name, **({"draft": draft} if draft else {})}, content_type="application/json")
    assert r.status_code == 201, r.content
    return r.json()


def put(client, pk, body):
    return client.put(f"/api/pipelines/{pk}", json.dumps(body), content_type="application/json")


def filled(route, ids):
    """A URL pattern's route with its parameters filled in: `<int:pk>` after `runs/` with ids["runs"]..."""
    def value(m):
        if m["name"] == "pk":
            return str(ids[m["owner"]])
        return {"node_id": "n0", "area": "out", "port": "out", "path": "value.txt", "index": "0", "name": "digits", "kind": "my_train",
                "version": "1"}[m["name"]]

    return "/" + re.sub(r"(?:(?P<owner>\w+)/)?<(?:(?P<conv>\w+):)?(?P<name>\w+)>",
                        lambda m: (f"{m['owner']}/" if m["owner"] else "") + value(m), route)


def test_signing_in_is_required_everywhere(client, users):
    """Every API URL answers 401 to a visitor who is not signed in, whatever the method, and
    every page sends them to the sign-in page; nothing is changed or shown."""
    from designer import urls

    p = Pipeline.objects.create(owner=users["owner"], name="mine", draft=chain(2))
    run = runs.submit(users["owner"], chain(2), pipeline=p, inline=True)
    ids = {"pipelines": p.id, "runs": run.id, "datasets": 1, "versions": 1, "sweeps": 1, "tokens": 1}
    for pattern in urls.api_patterns:
        url = filled("api/" + str(pattern.pattern), ids)
        answers = {method: getattr(client, method)(url).status_code for method in ("get", "post", "put", "delete")}
        if url.endswith("/score"):  # scoring takes an endpoint key, no session: sent on to the serving process
            assert answers == {"get": 405, "post": 307, "put": 405, "delete": 405}, answers
            continue
        if url.startswith("/api/schemas/"):  # the JSON Schemas of the files a person writes: anyone's, read only
            assert answers == {"get": 200, "post": 405, "put": 405, "delete": 405}, answers
            continue
        assert set(answers.values()) <= {401, 405} and 401 in answers.values(), (url, answers)
    pages = [str(x.pattern) for x in urls.urlpatterns if not str(x.pattern).startswith(("admin/", "accounts/", "api/"))]
    assert len(pages) >= 10
    for route in pages:
        url = filled(route, ids)
        for method in ("get", "post"):
            r = getattr(client, method)(url)
            assert r.status_code == 405 or (r.status_code == 302 and r["Location"].startswith("/accounts/login/")), (url, method)
    assert Pipeline.objects.get(pk=p.id).name == "mine" and Run.objects.get().status == "completed"


def test_the_catalogue_is_generated_from_the_module_declarations(owner_client):
    modules = {m["kind"]: m for m in owner_client.get("/api/modules").json()["modules"]}
    add = modules["toy_add"]
    assert add["label"] == "Toy add" and add["category"] == "Tests" and add["version"] == 1
    assert add["inputs"][0] == {"name": "input", "label": "Input", "type": "ImageDirectory", "optional": False,
                                "what": "images with a labels index"}
    amount = next(p for p in add["params"] if p["name"] == "amount")
    assert (amount["type"], amount["default"], amount["min"], amount["max"]) == ("int", 1, -100, 100)


def test_an_owner_creates_lists_loads_renames_clones_and_deletes(owner_client):
    p = create(owner_client, chain(3), name="first")
    assert [x["name"] for x in owner_client.get("/api/pipelines").json()["pipelines"]] == ["first"]
    loaded = owner_client.get(f"/api/pipelines/{p['id']}").json()
    assert loaded["draft"]["nodes"][1]["id"] == "n1" and loaded["problems"] == []
    r = put(owner_client, p["id"], {"revision": 1, "name": "renamed"})
    assert r.status_code == 200 and r.json()["revision"] == 2 and r.json()["name"] == "renamed"
    copy = owner_client.post(f"/api/pipelines/{p['id']}/clone").json()
    assert copy["name"] == "renamed (copy)" and copy["draft"] == loaded["draft"]
    assert owner_client.delete(f"/api/pipelines/{p['id']}").status_code == 204
    assert [x["id"] for x in owner_client.get("/api/pipelines").json()["pipelines"]] == [copy["id"]]


def test_a_stranger_sees_none_of_it(owner_client, stranger_client, users):
    p = create(owner_client, chain(2))
    run = runs.submit(users["owner"], chain(2), pipeline=Pipeline.objects.get(pk=p["id"]), inline=True)
    assert stranger_client.get("/api/pipelines").json()["pipelines"] == []
    for url in (f"/api/pipelines/{p['id']}", f"/api/pipelines/{p['id']}/export", f"/api/runs/{run.id}",
                f"/api/runs/{run.id}/events", f"/api/runs/{run.id}/nodes/n0/log", f"/api/runs/{run.id}/nodes/n0/files"):
        assert stranger_client.get(url).status_code == 404, url
    assert stranger_client.delete(f"/api/pipelines/{p['id']}").status_code == 404
    assert stranger_client.post(f"/api/pipelines/{p['id']}/runs").status_code == 404
    assert stranger_client.post(f"/api/runs/{run.id}/cancel").status_code == 404
    assert put(stranger_client, p["id"], {"revision": 1, "name": "mine"}).status_code == 404
    assert stranger_client.get("/api/runs").json()["runs"] == []
    assert Pipeline.objects.get(pk=p["id"]).name == "p"


def test_saving_a_stale_revision_is_refused_and_keeps_the_stored_draft(owner_client):
    p = create(owner_client, chain(2))
    first_tab = put(owner_client, p["id"], {"revision": 1, "draft": chain(3)})
    assert first_tab.status_code == 200
    second_tab = put(owner_client, p["id"], {"revision": 1, "draft": chain(5)})
    assert second_tab.status_code == 409
    assert second_tab.json()["stored_revision"] == 2 and "reload" in second_tab.json()["error"]
    assert len(Pipeline.objects.get(pk=p["id"]).draft["nodes"]) == 3


def test_a_draft_with_problems_is_saved_and_its_problems_are_listed(owner_client):
    p = create(owner_client, chain(2))
    broken = chain(2)
    broken["nodes"][1]["parameters"]["amount"] = 1000
    r = put(owner_client, p["id"], {"revision": 1, "draft": broken})
    assert r.status_code == 200
    assert [(x["node"], x["param"]) for x in r.json()["problems"]] == [("n1", "amount")]


def test_malformed_or_misshapen_saves_are_refused_and_lose_nothing(owner_client):
    p = create(owner_client, chain(2))
    r = owner_client.put(f"/api/pipelines/{p['id']}", b'{"revision": 1, "draft": ', content_type="application/json")
    assert r.status_code == 400 and "not valid JSON" in r.json()["error"]
    r = put(owner_client, p["id"], {"revision": 1, "draft": {"schema_version": 1, "nodes": "x", "links": []}})
    assert r.status_code == 400 and r.json()["problems"][0]["code"] == "schema"
    r = put(owner_client, p["id"], {"revision": 1, "draft": {"schema_version": 9, "nodes": [], "links": []}})
    assert r.status_code == 400 and "newer Pipeline Designer" in r.json()["problems"][0]["text"]
    stored = Pipeline.objects.get(pk=p["id"])
    assert stored.revision == 1 and len(stored.draft["nodes"]) == 2


def test_validate_lists_every_problem(owner_client):
    doc = pipeline([node("a", "toy_source", value=-1), node("b", "toy_add"), node("c", "gone")], [link("a", "b"), link("b", "a", dst_port="x")])
    body = owner_client.post("/api/validate", json.dumps(doc), content_type="application/json").json()
    assert not body["valid"]
    assert {p["code"] for p in body["problems"]} == {"bad_value", "unknown_kind", "missing_port", "cycle"}
    assert all(p["text"] for p in body["problems"])
    bad = owner_client.post("/api/validate", b"{nope", content_type="application/json").json()
    assert bad["problems"][0]["code"] == "malformed_json"


def test_an_import_with_problems_is_a_draft_that_lists_them_and_cannot_run_yet(owner_client):
    doc = pipeline([node("a", "toy_source", value=5000), node("b", "toy_add", colour=1)], [])
    r = owner_client.post("/api/pipelines/import", json.dumps(doc), content_type="application/json")
    assert r.status_code == 201
    assert sorted(p["code"] for p in r.json()["problems"]) == ["bad_value", "missing_input", "unknown_param"]
    run = owner_client.post(f"/api/pipelines/{r.json()['id']}/runs")
    assert run.status_code == 400 and len(run.json()["problems"]) == 3
    r = owner_client.post("/api/pipelines/import", b'{"schema_version": 2, "nodes": [{"id": 1}]', content_type="application/json")
    assert r.status_code == 400 and r.json()["error"].startswith("the file cannot be imported")
    assert Pipeline.objects.count() == 1


def test_export_then_import_gives_an_identical_pipeline(owner_client):
    p = create(owner_client, two_branches(), name="branches")
    exported = owner_client.get(f"/api/pipelines/{p['id']}/export")
    assert exported["Content-Disposition"] == 'attachment; filename="branches.json"'
    imported = owner_client.post("/api/pipelines/import", exported.content, content_type="application/json").json()
    again = owner_client.get(f"/api/pipelines/{imported['id']}/export")
    assert again.content == exported.content and imported["name"] == "branches"


def test_a_stored_pipeline_with_an_unknown_module_still_opens_but_cannot_run(owner_client, users):
    doc = chain(2)
    doc["nodes"][1]["kind"] = "retired_module"
    p = Pipeline.objects.create(owner=users["owner"], name="old", draft=doc)
    loaded = owner_client.get(f"/api/pipelines/{p.id}").json()
    assert loaded["draft"] == doc
    assert any(x["code"] == "unknown_kind" and x["node"] == "n1" for x in loaded["problems"])
    r = owner_client.post(f"/api/pipelines/{p.id}/runs")
    assert r.status_code == 400, r.json()
    assert "retired_module" in json.dumps(r.json()["problems"])
    assert not Run.objects.exists()


def test_an_empty_pipeline_is_not_run(owner_client, users):
    p = Pipeline.objects.create(owner=users["owner"], name="empty", draft={"schema_version": 2, "nodes": [], "links": []})
    assert owner_client.get(f"/api/pipelines/{p.id}").json()["problems"] == []  # an empty draft is fine to edit
    r = owner_client.post(f"/api/pipelines/{p.id}/runs")
    assert r.status_code == 400 and r.json()["problems"][0]["code"] == "empty_pipeline", r.json()
    assert "no module to run: drag one from the palette" in r.json()["problems"][0]["text"]
    assert not Run.objects.exists()


@pytest.fixture
def broker_queue():
    """For tests that submit with no worker up: the queue is emptied afterwards (a task left
    there would be run by the next test's worker); `left()` says how many tasks it held."""
    from designer.celery import app

    purged = []

    def left():
        purged.append(app.control.purge())
        return purged[-1]

    yield left
    app.control.purge()


def test_a_run_submitted_without_any_worker_stays_queued_and_says_so(owner_client, broker_queue):
    broker_queue()
    p = create(owner_client, chain(2))
    r = owner_client.post(f"/api/pipelines/{p['id']}/runs")
    assert r.status_code == 201
    status = owner_client.get(f"/api/runs/{r.json()['id']}").json()
    assert status["status"] in ("queued", "running")
    assert status["nodes"]["n0"]["status"] == "queued" and status["nodes"]["n1"]["status"] == "pending"
    assert "No worker is running" in status["message"]
    assert broker_queue() == 1  # n0's task is kept by the broker for the first worker that comes


def test_a_run_keeps_the_pipeline_as_submitted_when_the_draft_changes(owner_client, users, broker_queue):
    p = create(owner_client, chain(2), name="before")
    run = owner_client.post(f"/api/pipelines/{p['id']}/runs").json()
    edited = chain(3)
    edited["nodes"][1]["parameters"]["amount"] = 50
    assert put(owner_client, p["id"], {"revision": 1, "draft": edited, "name": "after"}).status_code == 200
    runs.run_inline(run["id"])  # a worker coming now runs what was submitted, not the new draft
    status = owner_client.get(f"/api/runs/{run['id']}").json()
    assert status["status"] == "completed" and sorted(status["nodes"]) == ["n0", "n1"] and status["name"] == "before"
    download = owner_client.get(f"/api/runs/{run['id']}/nodes/n1/files/out/value.txt")
    assert b"".join(download.streaming_content) == b"2"  # 1 + amount 1, as submitted
    assert Run.objects.get(pk=run["id"]).snapshot["nodes"] == chain(2)["nodes"]
    assert owner_client.get(f"/api/pipelines/{p['id']}").json()["draft"]["nodes"][1]["parameters"]["amount"] == 50


def test_a_finished_runs_log_files_and_events_are_served(owner_client, users):
    p = Pipeline.objects.create(owner=users["owner"], name="p", draft=chain(2))
    run = runs.submit(users["owner"], p.draft, pipeline=p, inline=True)
    status = owner_client.get(f"/api/runs/{run.id}").json()
    assert status["status"] == "completed", status
    assert status["nodes"]["n1"]["status"] == "completed"
    log = owner_client.get(f"/api/runs/{run.id}/nodes/n1/log").json()
    assert log["file"] == "70_driver_log.txt" and "total 2" in log["text"]
    tail = owner_client.get(f"/api/runs/{run.id}/nodes/n1/log?offset={log['next_offset'] - 9}").json()
    assert tail["text"].endswith(" s\n") and tail["next_offset"] == log["next_offset"]
    files = owner_client.get(f"/api/runs/{run.id}/nodes/n1/files").json()
    assert [f["path"] for f in files["outputs"]["out"]] == ["_meta.yaml", "value.txt"]
    download = owner_client.get(f"/api/runs/{run.id}/nodes/n1/files/out/value.txt")
    assert b"".join(download.streaming_content) == b"2"
    assert owner_client.get(f"/api/runs/{run.id}/nodes/n1/files/out/../../n0/out/value.txt").status_code == 404
    kinds = [e["type"] for e in owner_client.get(f"/api/runs/{run.id}/events").json()["events"]]
    assert kinds.count("node_started") == 2 and kinds.count("node_finished") == 2 and kinds[-1] == "run_finished"
    assert "metric" in kinds


def test_a_submit_that_fails_before_its_first_nodes_are_queued_leaves_no_run_behind(owner_client, users, monkeypatch):
    """The run and its first queued nodes are stored together: a web process that dies in between
    cannot leave a run whose nodes wait forever."""
    def dies(run_id):
        raise RuntimeError("the web process died here")

    monkeypatch.setattr(runs, "advance", dies)
    with pytest.raises(RuntimeError):
        runs.submit(users["owner"], chain(2))
    assert not Run.everything.exists()
