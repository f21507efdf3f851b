"""`Authorization: Bearer pd_...` on /api/: a personal API token (designer/pipelines/accounts/tokens.py)
stands for its owner, with no session and no CSRF token.

Placed after AuthenticationMiddleware: a request that carries a token is its owner's, whatever
session cookie it also carries. CSRF protects a browser's cookies from other sites; a token
is sent by the script itself, never added by a browser, so only a request that authenticated by
token skips the CSRF check (CsrfViewMiddleware reads the flag later, in process_view). A wrong,
revoked or malformed token is answered 401 JSON at once: a script learns why, instead of being
treated as a visitor who is not signed in. A request with no Authorization header is unchanged.
The scoring URL is left alone: its Bearer key is an endpoint's, checked by the serving process."""
from __future__ import annotations

import re

from django.http import JsonResponse

from designer.middleware import is_api
from designer.pipelines.accounts import tokens

SCORING = re.compile(r"/api/endpoints/[^/]+/score")


def _refused(message: str) -> JsonResponse:
    response = JsonResponse({"error": message}, status=401)
    response["WWW-Authenticate"] = 'Bearer realm="api"'
    return response


class BearerTokens:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        header = request.META.get("HTTP_AUTHORIZATION")
        if header is None or not is_api(request) or SCORING.fullmatch(request.path_info):
            return self.get_response(request)
        scheme, _, secret = header.strip().partition(" ")
        if scheme.lower() != "bearer":
            return _refused(f"the API takes `Authorization: Bearer {tokens.PREFIX}...` (a personal API token), not {scheme!r}")
        try:
            token = tokens.authenticate(secret.strip())
        except tokens.Refused as e:
            return _refused(str(e))
        request.user = token.owner
        request.api_token = token
        request._dont_enforce_csrf_checks = True  # see the module docstring
        return self.get_response(request)
