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

from designer.pipelines.endpoints import service as endpoints
from designer.pipelines.models import Endpoint
from designer.pipelines.registry import service as registry
from designer.pipelines.registry.api import refused
from designer.pipelines.web import BadRequest, api, json_object


def _mine(request, name: str) -> Endpoint:
    endpoint = Endpoint.objects.select_related("version__model").filter(name=name, owner=request.user).first()
    if endpoint is None:
        raise BadRequest(f"you have no endpoint {name!r}", status=404)
    return endpoint


@api("GET", "POST")
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


@api("GET", "PATCH", "DELETE")
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


@api("POST")
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
    target = endpoints.scoring_url_for(name)
    response = JsonResponse({"error": f"scoring is answered by the serving process: POST {target}", "scoring_url": target},
                            status=307)
    response["Location"] = target
    return response
