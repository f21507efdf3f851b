"""Personal API tokens, as JSON (the page is token_views.py):

    GET     /api/tokens           the user's active tokens (never their secrets)
    POST    /api/tokens {name}    201 a new token, with its secret in `token`: shown this once
    DELETE  /api/tokens/<id>      204 revoked at once

A request authenticated by a token may list tokens but neither make nor revoke one (403): a
leaked token must not be able to mint tokens that outlive its own revocation, nor revoke the
owner's other tokens. Tokens are managed from a signed-in session (the page, or this API with
its CSRF token)."""
from __future__ import annotations

from django.http import HttpResponse, JsonResponse

from designer.pipelines.accounts import tokens
from designer.pipelines.openapi import INT, STR, TIME, Op, arr, maybe, named, obj
from designer.pipelines.web import BadRequest, api, body_json

TOKEN = named("ApiToken", obj({"id": INT, "name": STR, "prefix": STR, "created_at": TIME, "last_used_at": maybe(TIME),
                               "revoked_at": maybe(TIME)}))


def _session_only(request) -> None:
    if getattr(request, "api_token", None) is not None:
        raise BadRequest("an API token cannot make or revoke tokens: sign in and use the page "
                         f"{tokens.PAGE}", status=403)


@api("GET", "POST", doc={
    "GET": Op("Your active API tokens (never their secrets)", obj({"tokens": arr(TOKEN)})),
    "POST": Op("Make a token (from a signed-in session only: a token cannot make tokens); its secret is in `token`, shown "
               "this once", {"allOf": [TOKEN, obj({"token": STR})]}, status=201, body=obj(optional={"name": STR}),
               errors=(403,))})
def token_list(request):
    if request.method == "GET":
        return JsonResponse({"tokens": [tokens.as_json(t) for t in tokens.active(request.user)]})
    _session_only(request)
    name = body_json(request).get("name")
    if name is not None and not isinstance(name, str):
        raise BadRequest(f"`name` is text (what script or machine the token is for), got {name!r}")
    try:
        token, secret = tokens.create(request.user, name or "")
    except ValueError as e:
        raise BadRequest(str(e))
    return JsonResponse({**tokens.as_json(token), "token": secret}, status=201)


@api("DELETE", doc={"DELETE": Op("Revoke a token at once (from a signed-in session only)", status=204, errors=(403,))})
def token_detail(request, pk):
    _session_only(request)
    if tokens.revoke(request.user, pk) is None:
        raise BadRequest("you have no such token (or it is revoked already)", status=404)
    return HttpResponse(status=204)
