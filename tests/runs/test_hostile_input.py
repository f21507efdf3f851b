"""Input crafted to break the server, found by sending ~8,000 malformed requests to every route:
each is a named 4xx (JSON under /api/), never a 500. Bodies nested thousands deep, integers of
thousands of digits, lone UTF-16 surrogates; ids such as "²" (a digit to str.isdigit, not to
int); names longer than a file system takes; a multipart import without its file."""
import json

import pytest

from designer.pipelines.models import Pipeline
from designer.pipelines.runs import service as runs
from tests.pipes import chain, node, pipeline

pytestmark = pytest.mark.django_db

DEEP = "[" * 100_000
HUGE_INT = "9" * 5000


def post(client, url, text):
    return client.post(url, text, content_type="application/json")


def refused(r, *words, status=400):
    assert r["Content-Type"] == "application/json", (r.status_code, r.content[:300])
    if r.request["PATH_INFO"] == "/api/validate":  # it answers whether a document is valid, and why not
        assert r.status_code == 200 and r.json()["valid"] is False
        error = r.json()["problems"][0]["text"].replace("the file is", "the request body is")
    else:
        assert r.status_code == status, (r.status_code, r.content[:300])
        error = r.json()["error"]
    assert all(w in error for w in words), error
    return error


@pytest.mark.parametrize("url", ["/api/validate", "/api/pipelines", "/api/sweeps", "/api/models", "/api/endpoints", "/api/tokens"])
def test_every_json_route_names_a_body_nested_too_deeply_an_endless_integer_and_a_lone_surrogate(owner_client, url):
    refused(post(owner_client, url, DEEP), "the request body is nested too deeply")
    refused(post(owner_client, url, '{"name": ' + HUGE_INT + "}"), "integer of more than 4,300 digits")
    refused(post(owner_client, url, '{"name": "ok", "a": {"b": ["\\ud800"]}}'), "not Unicode at a.b[0]", "lone surrogate")
    # PostgreSQL's text and JSON cannot store a NUL: a 500 there before (found by fuzzing the API)
    refused(post(owner_client, url, '{"name": "a\\u0000b"}'), "NUL character (\\u0000) at name", "no database stores")
    refused(post(owner_client, url, '{"x": ' * 70 + "1" + "}" * 70), "more than 64 levels")


@pytest.mark.parametrize("url", ["/api/models/a%00b", "/api/endpoints/a%00b", "/api/components/a%00b/versions/1",
                                 "/api/runs/1/nodes/a%00b/files"])
def test_a_name_holding_a_nul_character_names_nothing(owner_client, url):
    refused(owner_client.get(url), "not found", status=404)


def test_pipeline_files_and_imports_say_what_is_wrong(owner_client):
    r = owner_client.post("/api/pipelines/import", {"other": "x"})  # a form without its file
    refused(r, "send the pipeline file as the form's field `file`")
    for nodes in ("null", "false", "1.5"):
        r = post(owner_client, "/api/pipelines/import", '{"schema_version": 2, "nodes": ' + nodes + ', "links": []}')
        assert r.status_code == 400 and r.json()["problems"], r.content[:300]
    r = owner_client.post("/api/pipelines/import", {"file": _file("[" * 5000)})
    assert refused(r, "the file cannot be imported") and "the file is nested too deeply" in r.json()["problems"][0]["text"]
    # the page: a name longer than its field takes, sent by hand
    r = owner_client.post("/pipelines/new", {"name": "n" * 300})
    assert r.status_code == 400 and "The pipeline was not created: a name may have at most 200 characters" in r.content.decode()


def _file(text):
    from django.core.files.uploadedfile import SimpleUploadedFile
    return SimpleUploadedFile("p.json", text.encode())


def test_a_revision_no_pipeline_can_have_is_a_conflict(owner_client, users):
    p = Pipeline.objects.create(owner=users["owner"], name="p", draft=pipeline([node("a", "toy_source")], []))
    for revision in (2**63 - 1, -1):
        r = owner_client.put(f"/api/pipelines/{p.id}", json.dumps({"revision": revision, "name": "q"}), content_type="application/json")
        assert r.status_code == 409 and r.json()["stored_revision"] == p.revision, r.content


def test_ids_that_are_digits_only_to_python_and_registered_model_versions_of_the_wrong_type(owner_client, users):
    run = runs.submit(users["owner"], chain(1), inline=True)
    refused(post(owner_client, "/api/models", json.dumps({"run": "²", "node": "n0", "name": "m"})), "run")
    refused(post(owner_client, "/api/endpoints", json.dumps({"name": "e", "model": "m", "version": "²"})), "no model 'm' version ²",
            status=404)
    refused(post(owner_client, "/api/endpoints", json.dumps({"name": "e", "model": [[1]], "version": 1})), "`model` is a registered model's name")
    for version in ("abc", [1], 2**70):
        doc = pipeline([node("m", "registered_model", model="m", version=version)], [])
        r = post(owner_client, "/api/pipelines", json.dumps({"name": "p", "draft": doc}))
        assert r.status_code in (201, 400), r.content[:300]
        problems = r.json()["problems"]
        assert any(x.get("node") == "m" and x.get("param") == "version" for x in problems), problems
    r = owner_client.post("/runs/delete", {"runs": ["²", str(run.id)]})
    assert r.status_code in (204, 302), r.status_code


def test_file_and_log_names_longer_than_a_file_system_takes_are_not_found(owner_client, users):
    run = runs.submit(users["owner"], chain(1), inline=True)
    r = owner_client.get(f"/api/runs/{run.id}/nodes/n0/files/out/{'x' * 5000}")
    assert r.status_code == 404 and r["Content-Type"] == "application/json"
    r = owner_client.get(f"/api/runs/{run.id}/nodes/n0/log", {"file": "x" * 5000})
    assert r.status_code in (400, 404) and r["Content-Type"] == "application/json", (r.status_code, r.content[:200])


def test_sweep_configurations_with_numbers_past_a_float_or_nested_thousands_deep_are_named(owner_client, users):
    doc = pipeline([node("a", "toy_tuning")], [])
    doc["parameters"] = [{"name": "lr", "type": "float", "default": 0.01}]
    doc["nodes"][0]["bindings"] = {"learning_rate": "lr"}
    p = Pipeline.objects.create(owner=users["owner"], name="p", draft=doc)
    config = {"sampling": "random", "primary_metric_name": "score", "primary_metric_goal": "maximize",
              "parameter_space": [{"name": "lr", "expression": "choice", "values": [10**400]}], "max_total_runs": 10**400}
    r = post(owner_client, "/api/sweeps", json.dumps({"pipeline": p.id, "config": config}))
    refused(r, "the sweep configuration has 2 problem(s)")
    assert [x["field"] for x in r.json()["problems"]] == ["parameter_space[0]", "max_total_runs"], r.json()["problems"]
    for text in ("a: " + "[" * 20000, "max_total_runs: " + HUGE_INT):
        r = post(owner_client, "/api/sweeps", json.dumps({"pipeline": p.id, "config_yaml": text}))
        refused(r, "the sweep configuration has 1 problem(s)")
        assert "nested too deeply or holds an integer too long" in r.json()["problems"][0]["message"], r.json()


def test_an_upload_with_a_length_that_is_not_a_number_is_not_a_500(owner_client):
    r = owner_client.post("/api/datasets", {}, CONTENT_LENGTH="abc")
    assert r.status_code == 400 and r["Content-Type"] == "application/json"


def test_a_name_typed_with_a_nul_character_is_refused_by_the_pages(owner_client):
    """PostgreSQL's text cannot store a NUL: the pages' names refuse it before the database does."""
    r = owner_client.post("/pipelines/new", {"name": "a\x00b"})
    assert r.status_code == 400 and "a name cannot hold a NUL character" in r.content.decode()
    r = owner_client.post("/account/tokens/", {"name": "a\x00b"})
    assert r.status_code == 400 and "a token&#x27;s name cannot hold a NUL character" in r.content.decode()
    assert not Pipeline.objects.exists()
