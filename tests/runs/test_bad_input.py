"""Every bad value is a named 400, never a 500: non-finite and overflowing numbers in parameters
(API, import, CLI), a revision that is not a number, an image URL on an output that holds no
images; and under /api/ every error is JSON, also those Django answers by itself."""
import json
import math

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from designer.pipelines.models import Pipeline
from designer.pipelines.runs import service as runs
from tests.pipes import link, node, pipeline

pytestmark = pytest.mark.django_db

# what a client may send: JSON has no NaN or Infinity, but Python's json (and so Django's
# request.body + json.loads) reads them, and reads 1e400 as Infinity
BAD_NUMBERS = [("NaN", "NaN is not a number"), ("Infinity", "Infinity (or a number too large for a float"),
               ("-Infinity", "-Infinity"), ("1e400", "Infinity (or a number too large for a float")]
PARAMS = [("value", "Toy source, parameter 'value': Value"), ("sleep", "Toy source, parameter 'sleep': Sleep")]  # an Int, and a Float with no maximum


def doc_text(param: str, literal: str) -> str:
    """A pipeline file whose toy_source node has `param` set to the raw JSON `literal`."""
    doc = pipeline([node("src", "toy_source", value=1), node("add", "toy_add")], [link("src", "add")])
    doc["nodes"][0]["parameters"][param] = "@@"
    return json.dumps(doc).replace('"@@"', literal)


def assert_names_it(problems: list, param: str, label: str, reason: str):
    texts = [p["text"] for p in problems]
    assert any(p.get("node") == "src" and p.get("param") == param and label in p["text"] and reason in p["text"]
               for p in problems), texts


@pytest.mark.parametrize(("literal", "reason"), BAD_NUMBERS)
@pytest.mark.parametrize(("param", "label"), PARAMS)
def test_validate_names_the_module_and_parameter_of_a_non_finite_number(owner_client, param, label, literal, reason):
    r = owner_client.post("/api/validate", doc_text(param, literal), content_type="application/json")
    assert r.status_code == 200 and r.json()["valid"] is False
    assert_names_it(r.json()["problems"], param, label, reason)


@pytest.mark.parametrize(("literal", "reason"), BAD_NUMBERS)
@pytest.mark.parametrize(("param", "label"), PARAMS)
def test_saving_or_importing_a_non_finite_number_is_a_400(owner_client, users, param, label, literal, reason):
    p = Pipeline.objects.create(owner=users["owner"], name="p", draft=json.loads(doc_text("value", "1")))
    body = f'{{"revision": {p.revision}, "draft": {doc_text(param, literal)}}}'
    r = owner_client.put(f"/api/pipelines/{p.id}", body, content_type="application/json")
    assert r.status_code == 400, r.content
    assert_names_it(r.json()["problems"], param, label, reason)
    p.refresh_from_db()
    assert p.draft["nodes"][0]["parameters"] == {"value": 1}  # nothing was stored

    r = owner_client.post("/api/pipelines", f'{{"draft": {doc_text(param, literal)}}}', content_type="application/json")
    assert r.status_code == 400
    assert_names_it(r.json()["problems"], param, label, reason)

    r = owner_client.post("/api/pipelines/import", doc_text(param, literal), content_type="application/json")
    assert r.status_code == 400 and r.json()["error"].startswith("the file cannot be imported")
    assert_names_it(r.json()["problems"], param, label, reason)
    assert Pipeline.objects.count() == 1


def test_a_non_finite_number_anywhere_in_a_draft_is_a_400(owner_client, users):
    p = Pipeline.objects.create(owner=users["owner"], name="p", draft=json.loads(doc_text("value", "1")))
    draft = doc_text("value", "1").replace('"layout": {}', '"layout": {"src": {"x": NaN, "y": 1e400}}')
    r = owner_client.put(f"/api/pipelines/{p.id}", f'{{"revision": {p.revision}, "draft": {draft}}}',
                         content_type="application/json")
    assert r.status_code == 400
    assert [x["text"] for x in r.json()["problems"]] == [
        "layout/src/x: NaN is not a number",
        "layout/src/y: Infinity (or a number too large for a float, such as 1e400) is not a finite number"]


def test_a_draft_with_nan_cannot_even_be_stored_and_a_run_request_with_nan_is_a_400(owner_client, users):
    """No database stores NaN in JSON (SQLite's JSON_VALID, PostgreSQL's jsonb): a run is always of
    a checked draft; what a run request may carry are its options."""
    from django.db import DataError, IntegrityError, transaction

    with pytest.raises((IntegrityError, DataError)), transaction.atomic():
        Pipeline.objects.create(owner=users["owner"], name="p", draft=json.loads(doc_text("sleep", "NaN")))
    p = Pipeline.objects.create(owner=users["owner"], name="p", draft=json.loads(doc_text("value", "1")))
    for body in ('{"regenerate": NaN}', '{"regenerate": [{"a": 1}]}', '{"regenerate": 1e400}', '{"regenerate": "yes"}'):
        r = owner_client.post(f"/api/pipelines/{p.id}/runs", body, content_type="application/json")
        assert r.status_code == 400 and "`regenerate` is true, false or a list of node ids, got" in r.json()["error"]
    assert not p.runs.exists()
    r = owner_client.post(f"/api/pipelines/{p.id}/runs", '{"regenerate": ["src"]}', content_type="application/json")
    assert r.status_code == 201


def test_a_float_with_no_maximum_refuses_infinity_and_an_int_refuses_what_fits_no_integer():
    from designer.engine import graph
    from designer.pipelines.catalogue.service import get_catalogue
    from tests.toy_modules import ToySource

    sleep = ToySource.param("sleep")
    assert sleep.max is None and sleep.check(1e12) is None  # the run-time check (executor, pane) too
    assert sleep.check(1e308) == "1e+308 is out of range: a number here is between -1e+12 and 1e+12"
    assert sleep.check(math.inf) == "expected a finite number: Infinity (or a number too large for a float, such as 1e400) is not a finite number"
    assert sleep.check(-math.inf).startswith("expected a finite number: -Infinity")
    for param, value, reason in [("sleep", math.inf, "Toy source, parameter 'sleep': Sleep: Infinity"),
                                 ("sleep", 10**400, "Sleep: 100000000000...(401 digits) is too large for a floating-point number"),
                                 ("value", 1e300, "Value: 1e+300 is too large: a whole number here is between"),
                                 ("value", -(10**30), "Value: -10000000000...(31 digits) is too large")]:
        problems = graph.validate(pipeline([node("src", "toy_source", **{param: value})], []), get_catalogue())
        assert [p.param for p in problems] == [param] and reason in str(problems[0]), problems


@pytest.mark.parametrize(("raw", "reason"), [("nan", "NaN is not a number"), ("NaN", "NaN is not a number"),
                                             ("inf", "Infinity"), ("-Infinity", "-Infinity"), ("1e400", "Infinity")])
def test_run_pipeline_set_refuses_a_non_finite_number_naming_it(tmp_path, users, raw, reason):
    path = tmp_path / "p.json"
    path.write_text(doc_text("value", "1"))
    with pytest.raises(CommandError) as e:
        call_command("run_pipeline", str(path), "--set", f"src.sleep={raw}", "--owner", "owner", "--inline")
    text = str(e.value)
    assert "cannot run, 1 problem(s)" in text and "Toy source, parameter 'sleep': Sleep:" in text and reason in text


def test_a_revision_that_is_not_a_number_is_a_400_naming_it(owner_client, users):
    p = Pipeline.objects.create(owner=users["owner"], name="p", draft=json.loads(doc_text("value", "1")))
    for revision in ("abc", None, 1.5, True, [1]):
        r = owner_client.put(f"/api/pipelines/{p.id}", json.dumps({"revision": revision, "name": "x"}),
                             content_type="application/json")
        assert r.status_code == 400, (revision, r.content)
        assert r.json()["error"] == f"`revision` must be a whole number (the revision you edited), got {revision!r}"
    p.refresh_from_db()
    assert p.name == "p"


def test_an_image_url_on_an_output_without_images_is_not_found(owner_client, users):
    run = runs.submit(users["owner"], pipeline([node("src", "toy_source", value=1)], []), inline=True)
    run.refresh_from_db()
    assert run.status == "completed"
    for url in (f"/runs/{run.id}/nodes/src/images/out/0",  # a folder of value.txt: no index.csv
                f"/runs/{run.id}/nodes/src/images/nope/0",  # no such output
                f"/runs/{run.id}/nodes/src/images/out/99999999999999999999",
                f"/runs/{run.id}/nodes/zz/images/out/0"):
        assert owner_client.get(url).status_code == 404, url


# ---------------------------------------------------------------- JSON under /api/, whatever failed


def test_an_unknown_api_url_is_a_json_404_without_the_url_list(owner_client, client):
    for c in (owner_client, client):
        r = c.get("/api/no/such/thing")
        assert r.status_code == 404 and r["Content-Type"] == "application/json"
        assert r.json() == {"error": "not found: there is no /api/no/such/thing (the API's addresses are listed in docs/reference/api.md)"}
    assert owner_client.get("/no/such/page").status_code == 404  # pages: Django's page


def test_a_method_not_allowed_is_json_and_says_which_are(owner_client):
    r = owner_client.delete("/api/validate")
    assert r.status_code == 405 and r["Allow"] == "POST"
    assert r.json() == {"error": "DELETE is not allowed on /api/validate; use POST"}


def test_a_csrf_failure_is_json_under_api_and_a_page_elsewhere(users):
    c = Client(enforce_csrf_checks=True)
    c.force_login(users["owner"])
    r = c.post("/api/pipelines", {"name": "x"}, content_type="application/json")
    assert r.status_code == 403 and r["Content-Type"] == "application/json"
    assert r.json()["error"].startswith("the CSRF check failed (CSRF cookie not set.): send the csrftoken cookie's value")
    assert not Pipeline.objects.exists()
    r = c.post("/pipelines/new", {"name": "x"})
    assert r.status_code == 403 and r["Content-Type"].startswith("text/html")


def test_a_request_django_refuses_is_json(owner_client, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    r = owner_client.post("/api/validate", json.dumps({"x": "y" * 2000}), content_type="application/json")
    assert r.status_code == 400 and r.json() == {"error": "400 bad request"}


@pytest.mark.urls("tests.runs.failing_urls")
def test_an_unexpected_exception_is_a_json_500_without_a_traceback(users, settings, caplog):
    c = Client(raise_request_exception=False)
    c.force_login(users["owner"])
    for debug in (True, False):
        settings.DEBUG = debug
        r = c.get("/api/fail")
        assert r.status_code == 500 and r["Content-Type"] == "application/json"
        assert r.json() == {"error": "the server failed on this request; the error is in the server's log"}
        assert b"Traceback" not in r.content and b"secret detail" not in r.content
    assert "secret detail" in caplog.text  # the server's log has it


def test_an_upload_whose_name_is_too_long_for_a_file_system_is_a_400_naming_it(owner_client):
    import io
    import zipfile

    from django.core.files.uploadedfile import SimpleUploadedFile

    from designer.pipelines.models import Dataset

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("k/a.png", b"x")
    r = owner_client.post("/api/datasets", {"file": SimpleUploadedFile("é" * 150 + ".zip", buf.getvalue())})
    assert r.status_code == 400
    assert r.json()["error"] == f"the file name {'é' * 60!r}... is 304 bytes long, more than the 255 a file system takes: rename the file"
    assert not Dataset.objects.exists()


def test_a_sweep_request_whose_pipeline_or_name_is_not_what_it_should_be_is_a_400(owner_client, users):
    p = Pipeline.objects.create(owner=users["owner"], name="p", draft=json.loads(doc_text("value", "1")))
    for bad in ("abc", [1], 1.5, True):
        r = owner_client.post("/api/sweeps", {"pipeline": bad, "config": {}}, content_type="application/json")
        assert r.status_code == 400 and r.json()["error"] == f"`pipeline` is a pipeline's id (a whole number), got {bad!r}"
    r = owner_client.post("/api/sweeps", {"pipeline": p.id, "name": 5, "config": {}}, content_type="application/json")
    assert r.status_code == 400 and r.json()["error"] == "`name` is text, got 5"


def test_a_pane_request_with_a_node_of_the_wrong_shape_is_a_400(owner_client, users):
    p = Pipeline.objects.create(owner=users["owner"], name="p", draft=json.loads(doc_text("value", "1")))
    for field in ("parameters", "run_settings", "bindings"):
        node_json = json.dumps({"id": "a", "kind": "toy_source", field: [1, 2]})
        r = owner_client.post(f"/pipelines/{p.id}/pane", {"node": node_json})
        assert r.status_code == 400 and b"`node` must be a node of the pipeline" in r.content, field


def test_deleting_runs_with_an_id_no_run_can_have_deletes_nothing(owner_client):
    r = owner_client.post("/runs/delete", {"runs": ["9" * 30]}, HTTP_HX_REQUEST="true")
    assert r.status_code == 204
    assert "Tick the runs to delete first." in owner_client.get("/").content.decode()


def test_a_name_that_is_not_text_is_a_400(owner_client, users):
    r = owner_client.post("/api/pipelines", {"name": ["x"]}, content_type="application/json")
    assert r.status_code == 400 and r.json()["error"] == "`name` is text, got ['x']"
    p = Pipeline.objects.create(owner=users["owner"], name="p", draft=json.loads(doc_text("value", "1")))
    r = owner_client.put(f"/api/pipelines/{p.id}", {"revision": p.revision, "name": 5}, content_type="application/json")
    assert r.status_code == 400 and r.json()["error"] == "`name` is text, got 5"
    r = owner_client.post("/api/tokens", {"name": {"a": 1}}, content_type="application/json")
    assert r.status_code == 400 and r.json()["error"].startswith("`name` is text")
    assert Pipeline.objects.get().name == "p"


def test_a_name_too_long_is_refused_on_create_and_save_as_on_rename(owner_client, users):
    long = "x" * 201
    r = owner_client.post("/api/pipelines", {"name": long}, content_type="application/json")
    assert r.status_code == 400 and r.json()["error"] == "a name may have at most 200 characters (this one has 201)"
    p = Pipeline.objects.create(owner=users["owner"], name="p", draft=json.loads(doc_text("value", "1")))
    r = owner_client.put(f"/api/pipelines/{p.id}", {"revision": p.revision, "name": long}, content_type="application/json")
    assert r.status_code == 400 and "at most 200 characters" in r.json()["error"]
    assert Pipeline.objects.get().name == "p"


def test_registering_from_a_run_that_is_not_an_id_is_a_400_naming_it(owner_client):
    for raw, shown in (('"abc"', "'abc'"), ("1e400", "inf"), ("[1]", "[1]")):
        body = '{"run": ' + raw + ', "node": "train", "name": "m"}'
        r = owner_client.post("/api/models", body, content_type="application/json")
        assert r.status_code == 400 and r.json()["error"] == f"`run` is a run's id (a whole number), got {shown}", r.json()
