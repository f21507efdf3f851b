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

from designer.engine import paths
from designer.engine import statuses as st
from designer.engine.store import NotInStore, StoreError
from designer.pipelines import artifact_store, downloads
from designer.pipelines.models import Dataset, ModelVersion, RegisteredModel
from designer.pipelines.openapi import ANY, BOOL, DOWNLOAD, INT, STR, TIME, Op, arr, maybe, named, obj
from designer.pipelines.registry import service as registry
from designer.pipelines.web import BadRequest, api, json_object

# what the API takes and answers, for its OpenAPI document (designer/pipelines/openapi.py)
VERSION_STATUS = {"type": "string", "enum": list(st.VERSION_STATUSES)}
TAGS = obj(more=STR)  # {name: text}
NAMED = obj({"id": INT, "name": STR})
DATASETS = arr(obj({"id": ANY, "name": STR, "node": STR}, {"version": INT}))  # id: the Dataset node's parameter, as the run had it
LINEAGE = obj(optional={  # written at registration; every field optional: an old or imported version may lack some
    "run": NAMED, "pipeline": maybe(NAMED), "node": obj({"id": STR, "kind": STR, "label": STR}),
    "datasets": obj(optional={"training": DATASETS, "validation": DATASETS}),
    "parameters": obj(), "parameter_values": obj(),
    "started_from": maybe(obj({"node": STR, "kind": STR, "label": STR, "parameters": obj()})),
    "metrics": obj(), "model_name": maybe(STR), "classes": arr(ANY)})

VERSION = named("ModelVersion", obj({
    "name": STR, "version": INT, "status": VERSION_STATUS, "error": STR, "description": STR, "tags": TAGS,
    "created_at": TIME, "has_onnx": BOOL, "size": INT, "format": STR, "lineage": LINEAGE, "run_url": maybe(STR),
    "pipeline_url": maybe(STR), "download_url": STR, "url": STR, "page_url": STR, "endpoints": arr(STR),
    "run_deleted": BOOL, "dataset_urls": obj(more=STR)}))

_MODEL = {"name": STR, "latest_version": maybe(INT), "latest_status": maybe(VERSION_STATUS), "classes": arr(ANY),
          "model_name": maybe(STR), "updated_at": TIME, "url": STR, "page_url": STR}
MODEL_SUMMARY = named("RegisteredModel", obj({**_MODEL, "versions": INT}))
MODELS = obj({"models": arr(MODEL_SUMMARY)})
MODEL = named("RegisteredModelVersions", obj({**_MODEL, "versions": arr(VERSION)}))  # versions: newest first

NAME = {"type": "string", "pattern": registry.NAME_PATTERN.pattern}  # registry.NAME_RULE
TAGS_IN = maybe({"type": "object", "propertyNames": {"minLength": 1}, "additionalProperties": {"type": ["string", "number"]}})  # values kept as text
REGISTER = obj({"run": INT, "node": STR, "name": NAME}, {"output": STR, "description": STR, "tags": TAGS_IN})
EDIT = obj(optional={"description": STR, "tags": TAGS_IN})


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


def _version(request, name: str, version: int) -> ModelVersion:
    try:
        return registry.get_version(request.user, name, version)
    except registry.RegistryError as e:
        raise refused(e)


@api("GET", "POST", doc={
    "GET": Op("Your registered models, each with its latest version", MODELS),
    "POST": Op("Register the model a completed node of one of your runs output as the next version of `name` (`output`: "
               "the port, where the node has several model outputs)", VERSION, status=201, body=REGISTER,
               errors=(404, 409), description="A trained model is then packaged on a worker (`status` preparing, then ready "
                                          "or failed); a model folder in a format of its own is ready at once.")})
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


@api("GET", doc={"GET": Op("A registered model with all its versions, newest first", MODEL)})
def model_detail(request, name: str):
    m = RegisteredModel.objects.filter(owner=request.user, name=name).first()
    if m is None:
        raise BadRequest(f"you have no model {name!r}", status=404)
    versions = m.versions.select_related("model").order_by("-version")
    return JsonResponse({**model_summary(m), "versions": [version_json(v) for v in versions]})


@api("GET", "PATCH", "DELETE", doc={
    "GET": Op("A version of a registered model, with its lineage", VERSION),
    "PATCH": Op("Edit a version's description or tags", VERSION, body=EDIT),
    "DELETE": Op("Delete a version and its files (refused while an endpoint serves it)", status=204, errors=(409,))})
def version_detail(request, name: str, version: int):
    v = _version(request, name, version)
    if request.method == "DELETE":
        try:
            registry.delete_version(v)
        except registry.RegistryError as e:
            raise refused(e)
        return HttpResponse(status=204)
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


@api("GET", doc={"GET": Op(
    "Download a version's folder as one .tar.gz", DOWNLOAD, content="application/gzip", errors=(409, 410, 503),
    description="409 while it is still being packaged, 410 when its files are gone from the artifact store.")})
def version_download(request, name: str, version: int):
    v = _version(request, name, version)
    if v.status == st.PREPARING:
        raise BadRequest(f"{v} is still being packaged (torch.export and ONNX): download it in a moment", status=409)
    try:
        # from the store's folder (with a bucket: downloaded first), never built in memory
        with artifact_store.materialized(registry.key_of(v)) as folder:
            return downloads.model_archive(request, folder, f"{name}-{v.version}")
    except (paths.OutsideFolder, NotInStore):  # a record naming a folder outside the store's models/, or files gone
        raise BadRequest(f"the files of {v} are gone from the artifact store", status=410)
    except StoreError as e:
        raise BadRequest(f"the artifact store cannot be read now: {e}", status=503)
