"""Endpoints API (managing them; scoring is the serving process's, designer/serving):

    GET|POST         /api/endpoints              POST {model, version, name?, entry_script?, entry_script_name?}
                                                 -> 201 endpoint (entry_script: the Python source of the
                                                 original's scoring script, init() and run(raw_data))
    GET|PATCH|DELETE /api/endpoints/<name>       PATCH {version?, entry_script?, entry_script_name?}: switch
                                                 with no failed request ("" as entry_script: the ONNX path)
    POST             /api/endpoints/<name>/keys  {key: primary|secondary}: a new key
    POST             /api/endpoints/<name>/score here: 307 to the serving process's address
"""
from __future__ import annotations

from django.http import HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from designer.engine import statuses as st
from designer.pipelines.endpoints import service as endpoints
from designer.pipelines.models import Endpoint
from designer.pipelines.openapi import INT, NUM, STR, TIME, Op, arr, maybe, named, obj
from designer.pipelines.registry import service as registry
from designer.pipelines.registry.api import refused
from designer.pipelines.web import BadRequest, api, json_object

# what the API takes and answers, for its OpenAPI document (designer/pipelines/openapi.py)
ENDPOINT = named("Endpoint", obj({
    "name": STR, "model": STR, "version": INT, "status": {"type": "string", "enum": list(st.ENDPOINT_STATUSES)},
    "status_message": STR, "scoring_url": STR, "curl": STR, "keys": obj({"primary": STR, "secondary": STR}),
    "entry_script": maybe(STR), "format": STR,
    "stats": obj({"requests": INT, "errors": INT, "p50_ms": maybe(NUM), "p95_ms": maybe(NUM)}),
    "recent_errors": arr(obj({"at": TIME, "status": INT, "message": STR})), "versions": arr(INT),
    "created_at": TIME, "updated_at": TIME, "url": STR, "api_url": STR}))
SCRIPT = {"entry_script": STR, "entry_script_name": STR}  # the original's scoring script, init() and run(raw_data)
NAME = {"type": "string", "pattern": endpoints.NAME_PATTERN.pattern}  # endpoints.NAME_RULE
DEPLOY = obj({"model": STR, "version": INT}, {"name": NAME, **SCRIPT})
SWITCH = obj(optional={"version": INT, **SCRIPT})
SCRIPT_REFUSALS = (403, 413)  # an entry script needs the permission to add components; at most 256 KB


def _mine(request, name: str) -> Endpoint:
    endpoint = Endpoint.objects.select_related("version__model").filter(name=name, owner=request.user).first()
    if endpoint is None:
        raise BadRequest(f"you have no endpoint {name!r}", status=404)
    return endpoint


@api("GET", "POST", doc={
    "GET": Op("Your real-time endpoints, with their status, keys and figures", obj({"endpoints": arr(ENDPOINT)})),
    "POST": Op("Deploy a version of one of your registered models as an endpoint (named after the model unless `name` "
               "is given)", ENDPOINT, status=201, body=DEPLOY, errors=(404, 409, *SCRIPT_REFUSALS),
               description="With `entry_script` (Python source with init() and run(raw_data)) the script answers the "
                           "requests; without, the version's ONNX image classifier does. 409: the name is taken.")})
def endpoint_list(request):
    if request.method == "GET":
        mine = Endpoint.objects.filter(owner=request.user).select_related("version__model")
        return JsonResponse({"endpoints": [endpoints.endpoint_json(e) for e in mine]})
    body = json_object(request)
    if not body.get("model") or body.get("version") in (None, ""):
        raise BadRequest("send {\"model\": <registered model name>, \"version\": <number>, \"name\": <endpoint name, optional>}")
    try:
        endpoint = endpoints.create(request.user, body["model"], body["version"], body.get("name") or None,
                                    body.get("entry_script"), body.get("entry_script_name"))
    except registry.RegistryError as e:
        raise refused(e)
    return JsonResponse(endpoints.endpoint_json(endpoint), status=201)


@api("GET", "PATCH", "DELETE", doc={
    "GET": Op("An endpoint, with its status, keys and figures", ENDPOINT),
    "PATCH": Op("Switch an endpoint to another version of its model or another entry script, with no failed request",
                ENDPOINT, body=SWITCH, errors=SCRIPT_REFUSALS,
                description="`entry_script` \"\" goes back to the version's ONNX image classifier."),
    "DELETE": Op("Delete an endpoint (the version it served stays)", status=204)})
def endpoint_detail(request, name: str):
    endpoint = _mine(request, name)
    if request.method == "DELETE":
        endpoint.delete()
        return HttpResponse(status=204)
    if request.method == "PATCH":
        body = json_object(request)
        if body.get("version") in (None, "") and "entry_script" not in body:
            raise BadRequest("send {\"version\": <number>} to switch the endpoint to another version of its model, "
                             "or {\"entry_script\": <source>} to another entry script")
        try:
            endpoint = endpoints.switch(endpoint, body.get("version") if body.get("version") != "" else None,
                                        body.get("entry_script"), body.get("entry_script_name"))
        except registry.RegistryError as e:
            raise refused(e)
    return JsonResponse(endpoints.endpoint_json(endpoint))


@api("POST", doc={"POST": Op(
    "Regenerate one of an endpoint's two keys (the other keeps working while clients move)", ENDPOINT,
    body=obj(optional={"key": {"type": "string", "enum": ["primary", "secondary"], "default": "primary"}}))})
def endpoint_keys(request, name: str):
    endpoint = _mine(request, name)
    try:
        endpoint = endpoints.regenerate(endpoint, json_object(request).get("key", "primary"))
    except registry.RegistryError as e:
        raise refused(e)
    return JsonResponse(endpoints.endpoint_json(endpoint))


@csrf_exempt
@require_POST
def endpoint_score(request, name: str):
    """Scoring is served by the serving processes: a client that came here is sent there, its
    method and body kept (307); the key is checked there (no browser session needed)."""
    if not endpoints.NAME_PATTERN.fullmatch(name):  # names no endpoint; a newline in it cannot be a Location (a 500)
        return JsonResponse({"error": f"there is no endpoint {name!r}: a name is {endpoints.NAME_RULE}"}, status=404)
    target = endpoints.scoring_url_for(name)
    response = JsonResponse({"error": f"scoring is answered by the serving process: POST {target}", "scoring_url": target},
                            status=307)
    response["Location"] = target
    return response


# not web.api: no sign-in (a scoring client carries the endpoint's key, checked by the serving process)
endpoint_score.methods = ("POST",)  # type: ignore[attr-defined]
endpoint_score.openapi = {"POST": Op(  # type: ignore[attr-defined]
    "Scoring is answered by the serving process: 307 to its address (`Location`, and `scoring_url`), method and body "
    "kept", obj({"error": STR, "scoring_url": STR}), status=307,
    description="No sign-in needed here: the serving process checks the endpoint's key (`Authorization: Bearer <key>`).",
    signed_in=False)}
