"""The JSON API described: an OpenAPI 3.1 document built from the code that answers.

Each view of the API says what it takes and answers where it is declared, `@api("GET", "POST",
doc={"GET": Op(...), "POST": Op(...)})` (web.py); `document(patterns)` walks the URL patterns of
/api/ (designer/urls.py) and writes one operation per view and method: the path and its
parameters from the route itself (`<int:pk>` is an integer), the summary, the query parameters,
the request body, the success answer and the refusals, every refusal the `{"error", "problems"}`
shape of web.BadRequest. A route or a method with no description is an error when the document is
built (tests/test_openapi.py builds it, then fuzzes every operation against it with schemathesis:
no 500, no answer the document does not describe).

Schemas are JSON Schema (2020-12, as OpenAPI 3.1 has it), written with the few helpers below; a
schema used by several answers is named once (`named`) and referenced. Objects allow fields the
document does not name (an answer may grow), but every field it names is checked.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from django.http import JsonResponse
from django.shortcuts import render
from django.utils.html import escape
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET

JSON = "application/json"
VERSION = "1"  # of the API: paths and fields are only ever added under one version

STR = {"type": "string"}
INT = {"type": "integer"}
NUM = {"type": "number"}
BOOL = {"type": "boolean"}
TIME = {"type": "string", "format": "date-time"}
ANY: dict = {}
SCHEMAS: dict[str, dict] = {}
# schemas known only when the document is built (from what is installed: the module catalogue):
# name -> (build, stamp); build() gives {name: schema, ...}, stamp() changes when they would
LATE: dict[str, tuple] = {}


def maybe(schema: dict) -> dict:
    """`schema` or null."""
    return {"anyOf": [schema, {"type": "null"}]}


def arr(items: dict) -> dict:
    return {"type": "array", "items": items}


def obj(required: dict | None = None, optional: dict | None = None, more: dict | bool = True) -> dict:
    """An object whose `required` fields are always there and `optional` ones sometimes; `more`:
    the schema of other fields (True: anything, False: none)."""
    properties = {**(required or {}), **(optional or {})}
    schema: dict = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    if more is not True:
        schema["additionalProperties"] = more
    return schema


def ref(name: str) -> dict:
    return {"$ref": f"#/components/schemas/{name}"}


def named(name: str, schema: dict) -> dict:
    """`schema` kept under `name` in the document's components; its reference."""
    if SCHEMAS.get(name, schema) != schema:
        raise ValueError(f"two API schemas are named {name!r}")
    SCHEMAS[name] = schema
    return ref(name)


def late(name: str, build, stamp) -> dict:
    """A reference to the schema `name`, which `build()` makes (with others it references) each
    time the document is built again: when `stamp()` gives another value (built())."""
    LATE[name] = (build, stamp)
    return ref(name)


def _late_schemas() -> dict[str, dict]:
    found: dict[str, dict] = {}
    for build, _ in LATE.values():
        for name, schema in build().items():
            if name in SCHEMAS or found.get(name, schema) != schema:
                raise ValueError(f"two API schemas are named {name!r}")
            found[name] = schema
    return found


PROBLEM = named("Problem", obj({"message": STR, "code": STR}, {
    "node": maybe(STR), "port": maybe(STR), "param": maybe(STR), "link": maybe(STR),
    "pipeline_parameter": maybe(STR), "node_label": maybe(STR), "port_label": maybe(STR), "fixes": maybe(arr(ANY)),
    "text": STR}))
ERROR = named("Error", obj({"error": STR}, {"problems": arr(PROBLEM)}))


@dataclass(frozen=True)
class Op:
    """One method of one route. `ok`: the schema of the success answer (None: no body), sent with
    `status` as `content`; `body`: the JSON request body's schema (None: no body read), `form`:
    the multipart form it may come as instead; `query`: name -> schema; `errors`: the statuses of
    refusals besides 401 (not signed in), 404 (a path naming nothing of yours) and 400 (a body or
    a query that cannot be read)."""

    summary: str
    ok: dict | None = None
    status: int = 200
    content: str = JSON
    body: dict | None = None
    form: dict | None = None
    query: dict[str, dict] = field(default_factory=dict)
    errors: tuple[int, ...] = ()
    description: str = ""
    signed_in: bool = True  # False: anyone may call it (no 401; its own key, if any, is checked elsewhere)


DOWNLOAD = {"type": "string", "format": "binary"}


class Undescribed(Exception):
    """A route of the API, or one of its methods, that says nothing of itself."""


PARAMETER = re.compile(r"<(?:(?P<converter>\w+):)?(?P<name>\w+)>")
CONVERTERS = {"int": {"type": "integer", "minimum": 0}, "str": {"type": "string", "pattern": "^[^/]+$"},
              "path": {"type": "string", "pattern": "^[^/].*$"}}


def document(patterns, prefix: str = "/api/") -> dict:
    """The OpenAPI document of the views routed by `patterns` (URLPattern objects under `prefix`)."""
    paths: dict[str, dict] = {}
    for pattern in patterns:
        route = str(pattern.pattern)
        view = pattern.callback
        methods, ops = getattr(view, "methods", None), getattr(view, "openapi", None) or {}
        if methods is None:
            raise Undescribed(f"{prefix}{route}: its view is not declared with web.api")
        parameters = [{"name": m["name"], "in": "path", "required": True,
                       "schema": CONVERTERS[m["converter"] or "str"]} for m in PARAMETER.finditer(route)]
        item = paths.setdefault(prefix + PARAMETER.sub(r"{\g<name>}", route), {})
        tag = view.__module__.split(".")[-2] if view.__module__.endswith(".api") else view.__module__.split(".")[-1]
        for method in methods:
            if method not in ops:
                raise Undescribed(f"{method} {prefix}{route}: say what it takes and answers (web.api's doc)")
            item[method.lower()] = _operation(ops[method], parameters, tag, f"{view.__name__}_{method.lower()}")
    return {"openapi": "3.1.0",
            "info": {"title": "Pipeline Designer API", "version": VERSION,
                     "description": "The JSON API of Pipeline Designer, used by its pages and by scripts. Sign in with a "
                                    "session (the pages) or send `Authorization: Bearer pd_...`, a personal API token "
                                    "(Account, API tokens). Every refusal is `{\"error\": ..., \"problems\": [...]}`."},
            "paths": paths,
            "components": {"schemas": dict(sorted({**SCHEMAS, **_late_schemas()}.items())),
                           "securitySchemes": {"token": {"type": "http", "scheme": "bearer"},
                                               "session": {"type": "apiKey", "in": "cookie", "name": "sessionid"}}},
            "security": [{"token": []}, {"session": []}]}


REFUSALS = {
    400: "the request cannot be used: `error` says why, `problems` (if any) name each field, node or parameter",
    401: "not signed in, or a token that is not valid",
    403: "not allowed to you: `error` says which permission it needs",
    404: "nothing of yours by this name or id",
    409: "in conflict with what is stored now (in use, running, changed since): `error` says what",
    410: "gone: its stored files are missing",
    413: "too large: `error` names the limit and its setting",
}


def _operation(op: Op, parameters: list[dict], tag: str, operation_id: str) -> dict:
    ok: dict = {"description": op.summary}
    if op.ok is not None:
        ok["content"] = {op.content: {"schema": op.ok}}
    responses = {str(op.status): ok}
    statuses = ({401} if op.signed_in else set()) | set(op.errors) | ({404} if parameters else set()) | ({400} if op.body is not None or op.query else set())
    for status in sorted(statuses):
        responses[str(status)] = {"description": REFUSALS.get(status, "refused"), "content": {JSON: {"schema": ERROR}}}
    result: dict = {"operationId": operation_id, "summary": op.summary, "tags": [tag], "responses": responses}
    if not op.signed_in:
        result["security"] = []
    if op.description:
        result["description"] = op.description
    query = [{"name": name, "in": "query", "required": False, "schema": schema} for name, schema in op.query.items()]
    if parameters or query:
        result["parameters"] = parameters + query
    if op.body is not None:
        content = {JSON: {"schema": op.body}}
        if op.form is not None:
            content["multipart/form-data"] = {"schema": op.form}
        result["requestBody"] = {"required": False, "content": content}
    return result


# ---------------------------------------------------------------- served


def schema_view(summary: str, build):
    """GET: the JSON Schema `build()` makes (of a file a person writes), for anyone: the pages and
    an editor's YAML support read it; the server checks the same file from the same declarations."""
    @require_GET
    def view(request):
        return JsonResponse(build(), json_dumps_params={"indent": 1})

    view.methods = ("GET",)  # type: ignore[attr-defined]
    view.openapi = {"GET": Op(summary, obj({"$schema": STR, "type": STR}), signed_in=False)}  # type: ignore[attr-defined]
    return view


_BUILT: dict[int, tuple] = {}


def built(patterns) -> dict:
    """document(patterns), built once per process (the routes and declarations are code) and
    again when what a late schema is made of changes (a component file of a settings folder)."""
    stamp = tuple(stamp() for _, stamp in LATE.values())
    kept = _BUILT.get(id(patterns))
    if kept is None or len(kept[0]) != len(stamp) or any(a is not b for a, b in zip(kept[0], stamp)):
        _BUILT[id(patterns)] = (stamp, document(patterns))
    return _BUILT[id(patterns)][1]


def document_view(patterns):
    """GET /api/openapi.json: the document, for anyone (it holds no one's data)."""

    def view(request):
        return JsonResponse(built(patterns), json_dumps_params={"indent": 1})

    return view


def _text(words: str) -> str:
    """Words of the document for the page: `name` as code, the rest escaped."""
    return mark_safe(re.sub(r"`([^`]+)`", r"<code>\1</code>", escape(words)))


def docs_page(patterns):
    """GET /api/docs: the same document as a page to read, an operation under each path."""

    def view(request):
        doc = built(patterns)
        operations = [{"method": method.upper(), "path": path, "anchor": op["operationId"], **op,
                       "summary": _text(op["summary"]), "description": _text(op.get("description", "")),
                       "parameters": op.get("parameters", []),
                       "body": json.dumps(op["requestBody"]["content"][JSON]["schema"], indent=1) if "requestBody" in op else "",
                       "answers": [(status, _text(answer["description"]),
                                    json.dumps(next(iter(answer["content"].values()))["schema"], indent=1)
                                    if "content" in answer else "") for status, answer in op["responses"].items()]}
                      for path, item in doc["paths"].items() for method, op in item.items()]
        return render(request, "pipelines/api_docs.html", {
            "doc": doc, "description": _text(doc["info"]["description"]), "operations": operations,
            "schemas": [(name, json.dumps(schema, indent=1)) for name, schema in doc["components"]["schemas"].items()]})

    return view
