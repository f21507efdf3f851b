"""Datasets API: GET/POST /api/datasets (multipart upload, field `file`, optional `name`) and
GET/DELETE /api/datasets/<id>. A user only ever sees their own datasets: anything else is 404.
A name the user already has is refused (409, naming that dataset): send another `name`."""
from __future__ import annotations

from django.conf import settings
from django.http import HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404

from designer import limits
from designer.engine import paths
from designer.pipelines import downloads
from designer.pipelines.datasets import service as datasets
from designer.pipelines.models import Dataset
from designer.pipelines.web import BadRequest, api
from modules.convert_to_image_directory import NAME_MAX

MULTIPART_SLACK = limits.MULTIPART_SLACK  # form boundaries and headers around the file


def dataset_json(ds: Dataset) -> dict:
    return {"id": ds.id, "name": ds.name, "filename": ds.filename, "size": ds.size,
            "created_at": ds.created_at.isoformat(), "download_url": f"/api/datasets/{ds.id}/download"}


def _too_large(size: int) -> BadRequest:
    # daphne refuses this from the request's headers already (designer/limits.py); other servers
    # and the test client come here, with the same message
    message, limit = limits.too_large(limits.DATASET_UPLOAD_PATH, size)
    return BadRequest(message, status=413, limit_bytes=limit)


@api("GET", "POST")
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
    try:
        ds = datasets.store(request.user, request.POST.get("name", "").strip(), uploaded)
    except datasets.NameTaken as e:  # the same archive sent again, most likely: nothing is added
        raise BadRequest(str(e), status=409, dataset=e.existing.id)
    return JsonResponse(dataset_json(ds), status=201)


@api("GET", "DELETE")
def dataset_detail(request, pk: int):
    ds = get_object_or_404(Dataset, pk=pk, owner=request.user)
    if request.method == "GET":
        return JsonResponse(dataset_json(ds))
    datasets.delete(ds)
    return HttpResponse(status=204)


@api("GET")
def dataset_download(request, pk: int):
    """The archive as it was uploaded (a model's lineage links to the data it was trained on)."""
    ds = get_object_or_404(Dataset, pk=pk, owner=request.user)
    try:
        path = datasets.stored_path(ds)
        return downloads.file_response(request, path.open("rb"), ds.filename)  # from disk, a piece at a time
    except (OSError, paths.OutsideFolder):
        raise BadRequest(f"the file of dataset {ds.name!r} is missing from the artifact store", status=410)
