"""Datasets API: GET/POST /api/datasets (multipart upload, field `file`, optional `name`; `?name=`
lists one dataset's versions) and GET/DELETE /api/datasets/<id>. A user only ever sees their own
datasets: anything else is 404. Each id is one version of a name: uploading a name the user has
already adds its next version. A version a run or a registered model depends on is not deleted
(409, naming them)."""
from __future__ import annotations

from urllib.parse import quote

from django.conf import settings
from django.http import HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404

from designer import limits
from designer.engine import paths
from designer.engine.store import StoreError
from designer.pipelines import downloads
from designer.pipelines.datasets import service as datasets
from designer.pipelines.models import Dataset
from designer.pipelines.openapi import BOOL, DOWNLOAD, INT, STR, TIME, Op, arr, maybe, named, obj
from designer.pipelines.web import BadRequest, api
from modules.convert_to_image_directory import NAME_MAX

MULTIPART_SLACK = limits.MULTIPART_SLACK  # form boundaries and headers around the file

CONTENTS = obj(optional={"files": INT, "images": INT, "classes": obj(more=INT), "error": STR,
                         "preview": arr(obj({"name": STR, "label": STR}))})  # {} for an upload made before it was kept
_DATASET = {"id": INT, "name": STR, "version": INT, "latest": BOOL, "filename": STR, "size": INT, "created_at": TIME,
            "created_by": STR, "contents": CONTENTS, "download_url": STR, "page_url": STR}
DATASET = named("Dataset", obj(_DATASET))
USED_BY = obj({"runs": arr(obj({"id": INT, "name": STR, "status": STR, "node": STR, "url": maybe(STR)})),
               "models": arr(obj({"name": STR, "version": INT, "url": STR}))})
DATASET_DETAIL = named("DatasetVersion", obj({**_DATASET, "used_by": USED_BY}))
UPLOAD = obj({"file": DOWNLOAD}, {"name": STR})  # the view reads a multipart form only: JSON is refused (400)


def dataset_json(ds: Dataset, latest: bool | None = None) -> dict:
    """One version; `latest`: whether it is its name's latest (looked up when not given)."""
    if latest is None:
        latest = not Dataset.objects.filter(owner_id=ds.owner_id, name=ds.name, version__gt=ds.version).exists()
    return {"id": ds.id, "name": ds.name, "version": ds.version, "latest": latest, "filename": ds.filename, "size": ds.size,
            "created_at": ds.created_at.isoformat(), "created_by": ds.owner.get_username(), "contents": ds.contents or {},
            "download_url": f"/api/datasets/{ds.id}/download",
            "page_url": f"/data/{quote(ds.name, safe='')}/?version={ds.version}"}


def used_by_json(ds: Dataset) -> dict:
    runs = [{"id": r.id, "name": r.name, "status": r.status, "node": node,
             "url": f"/pipelines/{r.pipeline_id}/?run={r.id}" if r.pipeline_id else None}
            for r, node in datasets.runs_with_nodes(ds)]
    models = [{"name": v.model.name, "version": v.version, "url": f"/models/{quote(v.model.name, safe='')}/"}
              for v in datasets.models_using(ds)]
    return {"runs": runs, "models": models}


def listed(owner, name: str | None = None) -> list[dict]:
    """The owner's versions (of `name`), newest first, each marked latest or not in one query."""
    rows = Dataset.objects.filter(owner=owner).select_related("owner")
    if name is not None:
        rows = rows.filter(name=name)
    rows = list(rows)
    top: dict[str, int] = {}
    for d in rows:
        top[d.name] = max(top.get(d.name, 0), d.version)
    return [dataset_json(d, latest=d.version == top[d.name]) for d in rows]


def _too_large(size: int) -> BadRequest:
    # daphne refuses this from the request's headers already (designer/limits.py); other servers
    # and the test client come here, with the same message
    message, limit = limits.too_large(limits.DATASET_UPLOAD_PATH, size)
    return BadRequest(message, status=413, limit_bytes=limit)


def accepted_upload(request):
    """(the uploaded archive, the name asked for) of a multipart upload (the API's and the Data
    page's); BadRequest saying what is wrong: too large, no file, not an archive, a bad name."""
    # refuse before reading the body when the request says it is too big
    length = limits.declared_length(request)
    if length > settings.DATASET_MAX_UPLOAD_BYTES + MULTIPART_SLACK:
        raise _too_large(length)
    uploaded = request.FILES.get("file")
    if uploaded is None:
        raise BadRequest("send the archive as a multipart/form-data field named 'file'")
    if uploaded.size > settings.DATASET_MAX_UPLOAD_BYTES:
        raise _too_large(uploaded.size)
    name_bytes = len(uploaded.name.encode("utf-8", "surrogateescape"))
    if name_bytes > NAME_MAX:  # stored under its own name: the file system would refuse it (OSError)
        raise BadRequest(f"the file name {uploaded.name[:60]!r}... is {name_bytes} bytes long, more than the {NAME_MAX} "
                         "a file system takes: rename the file")
    try:
        datasets.check_archive(uploaded, uploaded.name)
    except datasets.NotAnArchive as e:
        raise BadRequest(str(e))
    name = request.POST.get("name", "").strip()
    if "\x00" in name:  # PostgreSQL's text cannot hold it (a 500 otherwise)
        raise BadRequest("the dataset's `name` holds a NUL character (\\x00): send another name")
    return uploaded, name


@api("GET", "POST", doc={
    "GET": Op("Your datasets, every version, newest first, with the largest upload allowed",
              obj({"datasets": arr(DATASET), "max_upload_bytes": INT}), query={"name": STR},
              description="`name`: only the versions of that dataset (none: an empty list)."),
    "POST": Op("Upload an archive of images (.zip, .tar, .tar.gz, .tgz, .tar.bz2) as a dataset: a new name is its "
               "version 1, a name you have already its next version", DATASET, status=201,
               body=UPLOAD, form=UPLOAD, errors=(413,),
               description="Send multipart/form-data: the archive in `file`, and `name` (the file's name when absent). "
                           "The answer says which `version` of that name it is. An upload over `max_upload_bytes` is "
                           "refused with 413 (`limit_bytes`).")})
def dataset_list(request):
    if request.method == "GET":
        name = request.GET.get("name")
        if name is not None and "\x00" in name:  # PostgreSQL's text cannot hold it (a 500 otherwise)
            raise BadRequest("`name` holds a NUL character (\\x00): no dataset is named so")
        return JsonResponse({"datasets": listed(request.user, name),
                             "max_upload_bytes": settings.DATASET_MAX_UPLOAD_BYTES})
    uploaded, name = accepted_upload(request)
    ds = datasets.store(request.user, name, uploaded)
    return JsonResponse(dataset_json(ds, latest=True), status=201)


@api("GET", "DELETE", doc={
    "GET": Op("One version of one of your datasets, with the runs that read it and the registered models trained on it",
              DATASET_DETAIL),
    "DELETE": Op("Delete a dataset version and its stored archive", status=204, errors=(409,),
                 description="Refused with 409 while a run that read it, or a registered model version trained on "
                             "it, is kept: the answer names them (`runs`: ids, `models`: name:version).")})
def dataset_detail(request, pk: int):
    ds = get_object_or_404(Dataset.objects.select_related("owner"), pk=pk, owner=request.user)
    if request.method == "GET":
        return JsonResponse({**dataset_json(ds), "used_by": used_by_json(ds)})
    try:
        datasets.delete(ds)
    except datasets.InUse as e:
        raise BadRequest(str(e), status=409, runs=[r.id for r in e.runs], models=[f"{v.model.name}:{v.version}" for v in e.models])
    return HttpResponse(status=204)


@api("GET", doc={"GET": Op(
    "Download a dataset's archive as it was uploaded", DOWNLOAD, content="application/*", errors=(410,),
    description="An attachment of the archive's own media type: application/zip, application/x-tar, application/gzip "
                "(.tar.gz, .tgz), application/x-bzip (.tar.bz2), application/octet-stream otherwise. 410 when its "
                "file is missing from the artifact store.")})
def dataset_download(request, pk: int):
    """The archive as it was uploaded (a model's lineage links to the data it was trained on)."""
    ds = get_object_or_404(Dataset, pk=pk, owner=request.user)
    try:
        # from the store, a piece at a time
        return downloads.file_response(request, datasets.open_file(ds), ds.filename)
    except (OSError, paths.OutsideFolder, StoreError):
        raise BadRequest(f"the file of dataset {ds.name!r} is missing from the artifact store", status=410)
