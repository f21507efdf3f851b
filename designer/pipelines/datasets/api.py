"""Datasets API: GET/POST /api/datasets (multipart upload, field `file`, optional `name`) and
GET/DELETE /api/datasets/<id>. A user only ever sees their own datasets: anything else is 404.
A name the user already has is refused (409, naming that dataset): send another `name`."""
from __future__ import annotations

from django.conf import settings
from django.http import HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404

from designer import limits
from designer.engine import paths
from designer.engine.store import StoreError
from designer.pipelines import downloads
from designer.pipelines.datasets import service as datasets
from designer.pipelines.models import Dataset
from designer.pipelines.openapi import DOWNLOAD, INT, STR, TIME, Op, arr, named, obj
from designer.pipelines.web import BadRequest, api
from modules.convert_to_image_directory import NAME_MAX

MULTIPART_SLACK = limits.MULTIPART_SLACK  # form boundaries and headers around the file

DATASET = named("Dataset", obj({"id": INT, "name": STR, "filename": STR, "size": INT, "created_at": TIME,
                                "download_url": STR}))
UPLOAD = obj({"file": DOWNLOAD}, {"name": STR})  # the view reads a multipart form only: JSON is refused (400)


def dataset_json(ds: Dataset) -> dict:
    return {"id": ds.id, "name": ds.name, "filename": ds.filename, "size": ds.size,
            "created_at": ds.created_at.isoformat(), "download_url": f"/api/datasets/{ds.id}/download"}


def _too_large(size: int) -> BadRequest:
    # daphne refuses this from the request's headers already (designer/limits.py); other servers
    # and the test client come here, with the same message
    message, limit = limits.too_large(limits.DATASET_UPLOAD_PATH, size)
    return BadRequest(message, status=413, limit_bytes=limit)


@api("GET", "POST", doc={
    "GET": Op("Your datasets, with the largest upload allowed", obj({"datasets": arr(DATASET), "max_upload_bytes": INT})),
    "POST": Op("Upload an archive of images (.zip, .tar, .tar.gz, .tgz, .tar.bz2) as a new dataset", DATASET, status=201,
               body=UPLOAD, form=UPLOAD, errors=(409, 413),
               description="Send multipart/form-data: the archive in `file`, and `name` (the file's name when absent). "
                           "A name you already use is refused with 409, naming that dataset in `dataset`; an upload "
                           "over `max_upload_bytes` with 413 (`limit_bytes`).")})
def dataset_list(request):
    if request.method == "GET":
        return JsonResponse({"datasets": [dataset_json(d) for d in request.user.datasets.all()],
                             "max_upload_bytes": settings.DATASET_MAX_UPLOAD_BYTES})
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
    try:
        ds = datasets.store(request.user, name, uploaded)
    except datasets.NameTaken as e:  # the same archive sent again, most likely: nothing is added
        raise BadRequest(str(e), status=409, dataset=e.existing.id)
    return JsonResponse(dataset_json(ds), status=201)


@api("GET", "DELETE", doc={"GET": Op("One of your datasets", DATASET),
                           "DELETE": Op("Delete a dataset and its stored archive", status=204)})
def dataset_detail(request, pk: int):
    ds = get_object_or_404(Dataset, pk=pk, owner=request.user)
    if request.method == "GET":
        return JsonResponse(dataset_json(ds))
    datasets.delete(ds)
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
