"""The Data page (Azure ML studio's Data assets): every dataset of the user with its latest version,
and an upload; a dataset's page: its versions, and for the version shown its size, file, who
uploaded it and when, its images per class, a preview, and its lineage (the runs that read it, the
registered models trained on it); a version's download and delete. A user sees only their own
datasets: anything else is 404. The rules are service.py's; the API (api.py) answers the same."""
from __future__ import annotations

from urllib.parse import quote

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from designer.pipelines.datasets import contents
from designer.pipelines.datasets import service as datasets
from designer.pipelines.datasets.api import accepted_upload, used_by_json
from designer.pipelines.models import Dataset
from designer.pipelines.web import BadRequest

KINDS = {".zip": "Zip archive", ".tar": "Tar archive", ".tar.gz": "Tar archive (gzip)", ".tgz": "Tar archive (gzip)",
         ".tar.bz2": "Tar archive (bzip2)", ".tbz2": "Tar archive (bzip2)", ".tbz": "Tar archive (bzip2)"}


def kind_of(filename: str) -> str:
    lower = filename.lower()
    return next((v for k, v in sorted(KINDS.items(), key=lambda kv: -len(kv[0])) if lower.endswith(k)), "Archive")


def page_url(name: str, version: int | None = None) -> str:
    return f"/data/{quote(name, safe='')}/" + (f"?version={version}" if version is not None else "")


@login_required
@require_http_methods(["GET", "POST"])
def data_list(request):
    if request.method == "POST":
        return _upload(request)
    rows: dict[str, dict] = {}
    for d in Dataset.objects.filter(owner=request.user).select_related("owner").order_by("name", "-version"):
        row = rows.setdefault(d.name, {"name": d.name, "latest": d, "versions": 0, "url": page_url(d.name)})
        row["versions"] += 1
    listed = sorted(rows.values(), key=lambda r: r["latest"].created_at, reverse=True)
    for row in listed:
        latest = row["latest"]
        row.update(kind=kind_of(latest.filename), classes=len(latest.contents.get("classes") or {}) if latest.contents else None)
    return render(request, "pipelines/data.html", {"rows": listed, "max_upload_bytes": settings.DATASET_MAX_UPLOAD_BYTES})


def _upload(request):
    """The page's upload: the next version of its name (version 1 of a new one), then its page."""
    try:
        uploaded, name = accepted_upload(request)
    except BadRequest as e:
        messages.error(request, f"Not uploaded: {e}")
        return redirect("data")
    ds = datasets.store(request.user, name or datasets.base_name(uploaded.name), uploaded)  # as the palette names it
    messages.success(request, f"Uploaded {ds.name} version {ds.version}.")
    return redirect(page_url(ds.name, ds.version))


@login_required
@require_GET
def data_page(request, name):
    versions = [] if "\x00" in name else datasets.versions_of(request.user, name)  # (PostgreSQL's text holds no NUL)
    if not versions:
        raise Http404(f"you have no dataset named {name!r}")
    wanted = request.GET.get("version", "")
    shown = next((v for v in versions if str(v.version) == wanted), None)
    if wanted and shown is None:
        messages.error(request, f"Dataset {name!r} has no version {wanted[:20]}: the latest is shown.")
    shown = shown or versions[0]
    found = datasets.contents_of(shown)
    classes = found.get("classes") or {}
    most = max(classes.values(), default=0)
    return render(request, "pipelines/dataset.html", {
        "name": name, "versions": versions, "shown": shown, "latest": versions[0], "kind": kind_of(shown.filename),
        "contents": found,
        # by name: PostgreSQL's jsonb keeps no order of keys
        "classes": [{"name": k, "count": n, "share": n / most if most else 0} for k, n in sorted(classes.items())],
        "preview": [{"index": i, **p} for i, p in enumerate(found.get("preview") or [])],
        "used_by": used_by_json(shown), "page_url": page_url(name),
    })


@login_required
@require_POST
def version_delete(request, pk):
    ds = get_object_or_404(Dataset, pk=pk, owner=request.user)
    try:
        datasets.delete(ds)
    except datasets.InUse as e:
        messages.error(request, str(e))
        return redirect(page_url(ds.name, ds.version))
    messages.success(request, f"Deleted {ds.name} version {ds.version}.")
    return redirect(page_url(ds.name) if Dataset.objects.filter(owner=request.user, name=ds.name).exists() else "data")


@login_required
@require_GET
def version_preview(request, pk, index):
    """One preview image of a version, as a PNG thumbnail (a bounded read of its archive)."""
    ds = get_object_or_404(Dataset, pk=pk, owner=request.user)
    try:
        png = datasets.thumbnail(ds, index)
    except contents.NotPreviewable as e:
        return HttpResponse(str(e), status=404, content_type="text/plain; charset=utf-8")
    response = HttpResponse(png, content_type="image/png")
    response["Cache-Control"] = "private, max-age=3600"  # a version's archive never changes
    return response
