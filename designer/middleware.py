"""Under /api/ every answer is JSON, errors included.

The API's own views answer JSON (designer.pipelines.web.api); what Django answers by itself does
not: an unknown URL (a 404 page that, with DEBUG, lists every URL), a method a view does not take
(405, empty), a failed CSRF check (403 page), a request Django refuses (400), and an unexpected
exception (500: with DEBUG a page with source, paths and settings). JsonErrorsForApi turns each
of these into {"error": message} with the same status, headers and cookies; the exception itself
stays in the server's log (Django logs it before this middleware sees the response).
"""
from __future__ import annotations

import json

from django.utils.deprecation import MiddlewareMixin
from django.views import csrf

API_PREFIX = "/api/"


def is_api(request) -> bool:
    return request.path_info.startswith(API_PREFIX)


def _message(request, response) -> str:
    status = response.status_code
    if status == 404:
        return f"not found: there is no {request.path} (the API's addresses are listed in docs/reference/api.md)"
    if status == 405:
        allowed = response.get("Allow", "")
        return f"{request.method} is not allowed on {request.path}" + (f"; use {allowed}" if allowed else "")
    if status >= 500:
        return "the server failed on this request; the error is in the server's log"
    return f"{status} {response.reason_phrase}".lower()


class JsonErrorsForApi(MiddlewareMixin):
    """Placed first in MIDDLEWARE, so that it sees the answer of everything inside it."""

    def process_response(self, request, response):
        if response.status_code < 400 or not is_api(request) or getattr(response, "streaming", False):
            return response
        if response.get("Content-Type", "").startswith("application/json"):
            return response
        # changed in place: the cookies and security headers set further in are kept
        response.content = json.dumps({"error": _message(request, response)}).encode()
        response["Content-Type"] = "application/json"
        if response.has_header("Content-Length"):
            response["Content-Length"] = str(len(response.content))
        return response


def csrf_failure(request, reason=""):
    """CSRF_FAILURE_VIEW: JSON under /api/ (a script or a stale page), Django's page elsewhere."""
    if not is_api(request):
        return csrf.csrf_failure(request, reason)
    from django.http import JsonResponse

    return JsonResponse({"error": f"the CSRF check failed ({reason}): send the csrftoken cookie's value in the "
                                  "X-CSRFToken header, as the page does; reload the page if it is old"}, status=403)
