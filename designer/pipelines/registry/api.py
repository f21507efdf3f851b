"""Model registry API: register a run's model, list names and versions, edit, delete and download
a version. A user only ever sees their own models: anything else is 404.

    POST   /api/models                      {run, node, name, output?, description?, tags?} -> 201 version
                                            (output: the port, where a component has several model outputs)
    GET    /api/models                      the user's model names
    GET    /api/models/<name>               its versions
    GET|PATCH|DELETE /api/models/<name>/versions/<n>
    GET    /api/models/<name>/versions/<n>/download   the version's folder as one .tar.gz
"""
from __future__ import annotations

from django.http import HttpResponse, JsonResponse

from designer.engine import statuses as st
from designer.pipelines import downloads
from designer.pipelines.models import Dataset, ModelVersion, RegisteredModel
from designer.pipelines.registry import service as registry
from designer.pipelines.web import BadRequest, api, json_object


def version_json(v: ModelVersion) -> dict:
    name = v.model.name
    base = f"/api/models/{name}/versions/{v.version}"
    return {
        "name": name, "version": v.version, "status": v.status, "error": v.error, "description": v.description,
        "tags": v.tags, "created_at": v.created_at.isoformat(), "has_onnx": v.has_onnx, "size": v.size,
        "format": v.format,
        "lineage": v.lineage, "run_url": f"/pipelines/{v.pipeline_id}/?run={v.run_id}" if v.pipeline_id and v.run_id else None,
        "pipeline_url": f"/pipelines/{v.pipeline_id}/" if v.pipeline_id else None,
        "download_url": f"{base}/download", "url": base, "page_url": f"/models/{name}/",
        "endpoints": list(v.endpoints.values_list("name", flat=True)),
        "run_deleted": v.run_id is None, "dataset_urls": _dataset_urls(v),
    }


def _dataset_urls(v: ModelVersion) -> dict:
    """{dataset id: its archive's URL} of the lineage's datasets that are still there."""
    ids = {d.get("id") for group in (v.lineage.get("datasets") or {}).values() for d in group if isinstance(d, dict)}
    kept = Dataset.objects.filter(owner_id=v.model.owner_id, pk__in=[i for i in ids if isinstance(i, int)])
    return {str(pk): f"/api/datasets/{pk}/download" for pk in kept.values_list("pk", flat=True)}


def model_summary(m: RegisteredModel) -> dict:
    latest = m.versions.order_by("-version").first()
    return {"name": m.name, "latest_version": latest.version if latest else None, "versions": m.versions.count(),
            "latest_status": latest.status if latest else None,
            "classes": (latest.lineage.get("classes") if latest else None) or [],
            "model_name": latest.lineage.get("model_name") if latest else None,
            "updated_at": m.updated_at.isoformat(), "url": f"/api/models/{m.name}", "page_url": f"/models/{m.name}/"}


def refused(e: registry.RegistryError) -> BadRequest:
    return BadRequest(str(e), status=e.status)


@api("GET", "POST")
def model_list(request):
    if request.method == "GET":
        models = RegisteredModel.objects.filter(owner=request.user).prefetch_related("versions")
        return JsonResponse({"models": [model_summary(m) for m in models]})
    body = json_object(request)
    missing = [k for k in ("run", "node", "name") if body.get(k) in (None, "")]
    if missing:
        raise BadRequest(f"missing {', '.join(missing)}: send {{\"run\": <run id>, \"node\": <node id>, \"name\": <model name>}}")
    try:
        version = registry.register(request.user, body["run"], body["node"], body["name"], body.get("description") or "",
                                    body.get("tags"), body.get("output"))
    except registry.RegistryError as e:
        raise refused(e)
    return JsonResponse(version_json(version), status=201)


@api("GET")
def model_detail(request, name: str):
    m = RegisteredModel.objects.filter(owner=request.user, name=name).first()
    if m is None:
        raise BadRequest(f"you have no model {name!r}", status=404)
    versions = m.versions.select_related("model").order_by("-version")
    return JsonResponse({**model_summary(m), "versions": [version_json(v) for v in versions]})


@api("GET", "PATCH", "DELETE")
def version_detail(request, name: str, version: int):
    try:
        v = registry.get_version(request.user, name, version)
        if request.method == "DELETE":
            registry.delete_version(v)
            return HttpResponse(status=204)
    except registry.RegistryError as e:
        raise refused(e)
    if request.method == "PATCH":
        body = json_object(request)
        if "description" in body:
            if not isinstance(body["description"], str):
                raise BadRequest("description must be text")
            v.description = body["description"][:5000]
        if "tags" in body:
            try:
                v.tags = registry.check_tags(body["tags"])
            except registry.RegistryError as e:
                raise refused(e)
        v.save(update_fields=["description", "tags"])
    return JsonResponse(version_json(v))


@api("GET")
def version_download(request, name: str, version: int):
    try:
        v = registry.get_version(request.user, name, version)
        folder = registry.folder_of(v)
    except registry.RegistryError as e:
        raise refused(e)
    if not folder.is_dir():
        raise BadRequest(f"the files of {v} are gone from the artifact store", status=410)
    if v.status == st.PREPARING:
        raise BadRequest(f"{v} is still being packaged (torch.export and ONNX): download it in a moment", status=409)
    return downloads.model_archive(request, folder, f"{name}-{v.version}")  # from disk, never built in memory
