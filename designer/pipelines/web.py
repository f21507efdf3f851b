"""The JSON API's plumbing, shared by every part of it (pipelines and runs, datasets, sweeps, the
model registry, endpoints, components, tokens): signed-in users only, the HTTP methods a view
takes, and a refusal answered as JSON, `{"error": ..., "problems": [...]}` with its status, never
an HTML page. A part's own refusals subclass BadRequest (drafts.DraftError does)."""
from __future__ import annotations

from functools import wraps

from django.core.exceptions import ObjectDoesNotExist
from django.http import Http404, JsonResponse
from django.views.decorators.http import require_http_methods

from designer.engine import jsontext


class BadRequest(Exception):
    """A request refused: `message` (the "error"), the `problems` found (graph.Problem, each with
    as_dict()), the HTTP status, and any other field of the answer."""

    def __init__(self, message: str, problems: list | None = None, status: int = 400, **extra):
        super().__init__(message)
        self.body = {"error": message, **({"problems": [p.as_dict() for p in problems]} if problems is not None else {}), **extra}
        self.status = status


def api(*methods, doc: dict | None = None):
    """Signed-in users only; JSON errors; the listed HTTP methods only. `doc`: what each method takes
    and answers, method -> openapi.Op (the API's OpenAPI document is built from it)."""

    def wrap(view):
        @require_http_methods(list(methods))
        @wraps(view)
        def inner(request, *args, **kwargs):
            if not request.user.is_authenticated:
                return JsonResponse({"error": "sign in first"}, status=401)
            if any("\x00" in str(value) for value in kwargs.values()):  # names nothing (and PostgreSQL refuses it)
                return JsonResponse({"error": "not found"}, status=404)
            try:
                return view(request, *args, **kwargs)
            except BadRequest as e:
                return JsonResponse(e.body, status=e.status)
            except (Http404, ObjectDoesNotExist):
                return JsonResponse({"error": "not found"}, status=404)

        inner.methods = methods  # type: ignore[attr-defined]
        inner.openapi = doc or {}  # type: ignore[attr-defined]
        return inner

    return wrap


def json_object(request) -> dict:
    """The request's body as a JSON object ({} when empty), whatever its Content-Type; a 400 saying
    why when it is not one."""
    try:
        data = jsontext.loads(request.body or b"{}")
    except jsontext.JsonTextError as e:
        raise BadRequest(f"the request body is {e}")
    if not isinstance(data, dict):
        raise BadRequest("the request body must be a JSON object")
    return data


def body_json(request) -> dict:
    """json_object, but {} for a bare POST (a button, curl -X POST): no options."""
    if request.content_type != "application/json" and not request.POST:
        return {}
    return json_object(request)
