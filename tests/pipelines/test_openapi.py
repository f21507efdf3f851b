"""The API described (designer/pipelines/openapi.py): the document the app serves at
/api/openapi.json covers every route and method of /api/, and every answer of the code is one the
document describes. schemathesis fuzzes each operation against it (requests it generates from the
document: odd ids, odd bodies and query strings), signed in by a personal API token, once as
generated and once with the path naming the user's own objects; it fails on a 500, a status, a
media type or a JSON body that the document does not describe."""
from __future__ import annotations

import pytest
import schemathesis
from django.core import signals
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.config import SchemathesisConfig
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from werkzeug.test import Client

from designer.pipelines.accounts import tokens
from designer.pipelines.authoring import drafts
from designer.pipelines.runs import service as runs
from designer.urls import api_patterns
from tests.pipelines import openapi_objects_datasets, openapi_objects_registry, openapi_objects_sweeps
from tests.pipes import chain

pytestmark = pytest.mark.django_db
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
# A pipeline document's schema describes every module kind's parameters, so the coverage phase
# (every boundary and choice of every keyword) makes thousands of bodies of each operation taking
# one: /api/validate and an import get its valid ones (the server must answer each without a
# 500); creating and saving a draft, which check it the same way, get the fuzzing's alone.
CONFIG = SchemathesisConfig.from_str(r"""
[[operations]]
include-path-regex = "^/api/(validate|pipelines/import)$"
phases.coverage.generation.mode = "positive"

[[operations]]
include-name = ["POST /api/pipelines", "PUT /api/pipelines/{pk}"]
phases.coverage.enabled = false
""")


def test_the_document_describes_every_route_and_method_of_the_api(client):
    answer = client.get("/api/openapi.json")
    assert answer.status_code == 200 and answer["Content-Type"] == "application/json"
    doc = answer.json()
    assert doc["openapi"].startswith("3.1") and len(doc["paths"]) == len(api_patterns)
    for pattern in api_patterns:
        described = doc["paths"]["/api/" + str(pattern.pattern).replace("<int:", "<").replace("<str:", "<")
                                  .replace("<path:", "<").replace("<", "{").replace(">", "}")]
        assert sorted(described) == sorted(m.lower() for m in pattern.callback.methods), pattern
        for method, op in described.items():  # signed in, but for scoring (the serving process checks its key)
            assert op["summary"] and ("401" in op["responses"]) == (op.get("security") != []), (pattern, method)


def test_the_browsable_page_lists_every_operation_with_its_answers(client):
    page = client.get("/api/docs").content.decode()
    assert "/api/openapi.json" in page
    assert '<code>/api/runs/{pk}/nodes/{node_id}/log</code>' in page and "Schemas" in page


schema = schemathesis.pytest.from_fixture("api_schema")


@pytest.fixture(scope="module")
def api_schema(django_db_blocker):
    with django_db_blocker.unblock():  # the request opens no transaction: it only reads the document
        return schemathesis.openapi.from_wsgi("/api/openapi.json", get_wsgi_application(), config=CONFIG)


@pytest.fixture
def world(django_user_model, settings, tmp_path):
    """A user, the token the requests carry, and objects of theirs that the paths can name. The
    requests reach the app as WSGI calls inside the test's transaction: as Django's test client
    does, the connection is not closed at each request's start and end. Their files go to a folder
    of this test's: the rows are rolled back, and a later test given the same ids must not find them."""
    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    try:
        yield _world(django_user_model)
    finally:
        signals.request_started.connect(close_old_connections)
        signals.request_finished.connect(close_old_connections)


def _world(django_user_model) -> dict:
    user = django_user_model.objects.create_user("fuzz", password="x")
    _, secret = tokens.create(user, "fuzzing")
    spare, _ = tokens.create(user, "a token the fuzzer may revoke")
    pipeline, _ = drafts.create(user, "fuzzed", chain(2))
    run = runs.submit(user, chain(2), pipeline=pipeline, name="fuzzed")
    names = {"pipelines": {"pk": pipeline.pk}, "runs": {"pk": run.pk, "node_id": "n1"}, "tokens": {"pk": spare.pk}}
    for more in (openapi_objects_sweeps, openapi_objects_registry, openapi_objects_datasets):
        names.update(more.objects(user))
    return {"headers": {"Authorization": f"Bearer {secret}"}, "names": names}


def _spare(case, names) -> None:
    """A generated DELETE that happens to name one of the user's objects (ids 1, 2... are likely)
    names another instead: the objects are kept for the operations after it."""
    own = names.get(case.operation.path.split("/")[2], {})
    if case.method == "DELETE" and case.path_parameters:
        case.path_parameters = {k: f"{v}0000" if k in own and str(own[k]) == str(v) else v
                                for k, v in case.path_parameters.items()}


def _own(case, names) -> bool:
    """The case's path parameters replaced by the user's own objects, where there is one. Not for a
    DELETE (but of the spare token): the operations share the objects, and those after it would
    find nothing (the deletions themselves are tested where their concern is)."""
    kind = case.operation.path.split("/")[2]
    if not case.path_parameters or (case.method == "DELETE" and kind != "tokens"):
        return False
    own = names.get(kind, {})
    changed = {k: own[k] for k in case.path_parameters if k in own}
    case.path_parameters = {**case.path_parameters, **changed}
    return bool(changed)


class _Server(Client):
    """The WSGI client of schemathesis, closing each answer once read, as a server does: Django then
    closes what the request opened (an upload's temporary file, a download's file)."""

    def open(self, *args, **kwargs):
        return super().open(*args, **{**kwargs, "buffered": True})


@pytest.mark.production  # PostgreSQL refuses what SQLite stores (a NUL character): 500s found only there
@schema.parametrize()
@settings(max_examples=12, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.filter_too_much])
def test_every_answer_of_the_api_is_one_its_document_describes(case, world):
    _spare(case, world["names"])
    server = _Server(get_wsgi_application())
    case.call_and_validate(session=server, headers=world["headers"], checks=CHECKS)
    if _own(case, world["names"]):
        case.call_and_validate(session=server, headers=world["headers"], checks=CHECKS)
