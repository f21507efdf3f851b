"""Components API: a user's uploaded components (components.py). JSON only; a user only ever sees
their own components: anything else is 404. Adding one needs the `pipelines.add_component`
permission (its command runs on the workers), granted by an administrator in the admin.

    GET    /api/components                         the user's components, by kind, newest version first
    POST   /api/components                         multipart: `file` (an archive, or a component.yaml),
                                                   or several `files` with one `paths` value each (the
                                                   file's path in its folder, as a browser's folder
                                                   input gives it in webkitRelativePath) -> 201
    GET    /api/components/<kind>                  its versions
    GET|DELETE /api/components/<kind>/versions/<n>
    GET    /api/schemas/component.json             the JSON Schema of a component file (sdk/component_schema.py),
                                                   for anyone: an editor's YAML support and the page read it
"""
from __future__ import annotations

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent
from django.http import HttpResponse, JsonResponse

from designer import limits
from designer.pipelines.catalogue import components
from designer.pipelines.models import Component
from designer.pipelines.openapi import ANY, BOOL, DOWNLOAD, INT, NUM, STR, TIME, Op, arr, named, obj, schema_view
from designer.pipelines.web import BadRequest, api
from sdk import component_schema as component_file_schema

NOT_ALLOWED = (f"adding components needs the permission '{components.PERMISSION_NAME}' (granted by an administrator "
               "in the admin): a component's command runs on the workers")

PORT = named("ComponentPort", obj({"name": STR, "label": STR, "type": STR, "optional": BOOL}))
PARAM = named("ComponentParam", obj({"name": STR, "label": STR, "type": STR}, {
    "default": ANY, "min": NUM, "max": NUM, "choices": arr(ANY), "help": STR,
    "optional": BOOL}))  # an Azure ML v2 file's optional scalar input: it may be left empty
VERSION = named("ComponentVersion", obj({
    "kind": STR, "version": INT, "label": STR, "category": STR, "created_at": TIME, "digest": STR, "file": STR,
    "description": STR, "distributed": BOOL, "command": STR, "inputs": arr(PORT), "outputs": arr(PORT),
    "params": arr(PARAM), "metrics": arr(STR), "url": STR}))
KIND = named("ComponentKind", obj({"kind": STR, "label": STR, "category": STR, "latest_version": INT,
                                   "versions": arr(VERSION), "url": STR}))
# the view reads a multipart form only (a JSON body is refused, 400): one `file`, or `files` with their `paths`
UPLOAD = obj(optional={"file": DOWNLOAD, "files": arr(DOWNLOAD), "paths": arr(STR)})


def _ports(ports: list) -> list[dict]:
    return [{"name": p.get("name"), "label": p.get("label"), "type": p.get("type"), "optional": bool(p.get("optional"))}
            for p in ports or []]


def _params(params: list) -> list[dict]:
    keep = ("name", "label", "type", "default", "min", "max", "choices", "help", "optional")
    return [{k: p[k] for k in keep if p.get(k) is not None} for p in params or []]


def version_json(c: Component) -> dict:
    d = c.declaration or {}
    declared = d.get("component") or {}
    return {
        "kind": c.kind, "version": c.version, "label": c.label, "category": c.category,
        "created_at": c.created_at.isoformat(), "digest": c.digest, "file": c.file,
        "description": d.get("description", ""), "distributed": bool(d.get("distributed")),
        "command": declared.get("command", ""), "inputs": _ports(d.get("inputs")), "outputs": _ports(d.get("outputs")),
        "params": _params(d.get("params")), "metrics": d.get("metrics") or [],
        "url": f"/api/components/{c.kind}/versions/{c.version}",
    }


def kind_json(kind: str, versions: list[Component]) -> dict:
    """One kind: its latest version's facts, and every version (newest first)."""
    latest = versions[0]
    return {"kind": kind, "label": latest.label, "category": latest.category, "latest_version": latest.version,
            "versions": [version_json(v) for v in versions], "url": f"/api/components/{kind}"}


def owned(user) -> list[dict]:
    """The user's components, by kind (as GET /api/components gives them)."""
    by_kind: dict[str, list[Component]] = {}
    for c in Component.objects.filter(owner=user).order_by("kind", "-version"):
        by_kind.setdefault(c.kind, []).append(c)
    return [kind_json(kind, versions) for kind, versions in by_kind.items()]


def listing(user) -> dict:
    return {"components": owned(user), "can_add": components.may_add(user),
            "max_upload_bytes": settings.COMPONENT_MAX_UPLOAD_BYTES}


def _too_large(size: int) -> BadRequest:
    # daphne refuses this from the request's headers already (designer/limits.py); other servers
    # and the test client come here, with the same message
    message, limit = limits.too_large(limits.COMPONENT_UPLOAD_PATH, size)
    return BadRequest(message, status=413, limit_bytes=limit)


def _received(request) -> tuple[list, list[str] | None]:
    """The uploaded files and their paths, as the request has them."""
    try:
        files = request.FILES.getlist("files") or request.FILES.getlist("file")
        names = request.POST.getlist("paths") or None
    except (TooManyFilesSent, TooManyFieldsSent):
        raise BadRequest(f"more than {settings.DATA_UPLOAD_MAX_NUMBER_FILES} files in one request: "
                         "upload an archive of the component's folder instead") from None
    except RequestDataTooBig:
        raise _too_large(limits.declared_length(request)) from None
    if not files:
        raise BadRequest("send the component as multipart/form-data: an archive (.zip, .tar.gz, .tgz, .tar) or its "
                         "component.yaml in a field named 'file', or a folder's files in fields named 'files' with "
                         "each file's path in its folder in a field 'paths'")
    total = sum(f.size for f in files)
    if total > settings.COMPONENT_MAX_UPLOAD_BYTES:
        raise _too_large(total)
    return files, names


@api("GET", "POST", doc={
    "GET": Op("Your uploaded components by kind (newest version first), and whether you may add one",
              obj({"components": arr(KIND), "can_add": BOOL, "max_upload_bytes": INT})),
    "POST": Op("Upload a component (an archive of its folder, its files, or its component.yaml) as a new version",
               VERSION, status=201, body=UPLOAD, form=UPLOAD, errors=(403, 413),
               description="Send multipart/form-data: an archive (.zip, .tar.gz, .tgz, .tar) or a component.yaml in "
                           "`file`, or a folder's files in `files` with each one's path in its folder in `paths` (one "
                           "per file, in order). Needs the permission 'Can add component' (403 without it). A bad "
                           "archive or component file is refused with 400 saying why; an upload larger than "
                           "`max_upload_bytes`, sent or unpacked, with 413 (`limit_bytes`).")})
def component_list(request):
    if request.method == "GET":
        return JsonResponse(listing(request.user))
    if not components.may_add(request.user):
        raise BadRequest(NOT_ALLOWED, status=403)
    # refuse before reading the body when the request says it is too big
    length = limits.declared_length(request)
    if length > limits.body_limit(limits.COMPONENT_UPLOAD_PATH)[0]:
        raise _too_large(length)
    files, names = _received(request)
    try:
        row = components.store(request.user, files, names)
    except components.Refused as e:
        raise BadRequest(str(e), status=e.status) from None
    return JsonResponse(version_json(row), status=201)


def _versions(user, kind: str) -> list[Component]:
    versions = list(Component.objects.filter(owner=user, kind=kind).order_by("-version"))
    if not versions:
        raise BadRequest(f"you have no component {kind!r}", status=404)
    return versions


@api("GET", doc={"GET": Op("One of your components: every version, newest first", KIND)})
def component_detail(request, kind: str):
    return JsonResponse(kind_json(kind, _versions(request.user, kind)))


@api("GET", "DELETE", doc={
    "GET": Op("One version of one of your components", VERSION),
    "DELETE": Op("Delete a version of a component and its files", status=204, errors=(409,),
                 description="Refused with 409 while a run that is not over runs that version.")})
def version_detail(request, kind: str, version: int):
    row = next((v for v in _versions(request.user, kind) if v.version == version), None)
    if row is None:
        raise BadRequest(f"your component {kind!r} has no version {version}", status=404)
    if request.method == "DELETE":
        try:
            components.remove(row)
        except components.Refused as e:  # a run that is not over runs it
            raise BadRequest(str(e), status=e.status)
        return HttpResponse(status=204)
    return JsonResponse(version_json(row))


component_schema = schema_view("The JSON Schema of a component file (component.yaml): for your editor's YAML support and "
                               "the components page", component_file_schema.schema)
