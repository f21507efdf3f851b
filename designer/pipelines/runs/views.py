"""Pages: the pipelines list and the designer. One view serves the full page or, for htmx, the
fragment it replaces. The designer's script is the page's ES modules (the main module wires them);
its right pane (a node's parameters) is rendered here from the module declaration. What a page
changes of a pipeline, it changes through drafts.py, as the API does."""
from __future__ import annotations

import mimetypes
from pathlib import Path

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ObjectDoesNotExist
from django.http import FileResponse, Http404, HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from designer.engine import graph, jsontext, paths, statuses
from designer.engine.store import NotInStore, StoreError
from designer.pipelines import artifact_store
from designer.pipelines.authoring import drafts
from designer.pipelines.catalogue.service import get_catalogue
from designer.pipelines.compute import workers as workers_of
from designer.pipelines.compute.rows import targets as target_rows
from designer.pipelines.compute.rows import workers
from designer.pipelines.datasets import service as datasets
from designer.pipelines.datasets.service import DATASET_KIND
from designer.pipelines.models import Dataset, NodeRun, Run
from designer.pipelines.runs import artifacts, retention, visualize
from designer.pipelines.runs.api import output_key
from designer.pipelines.web import BadRequest

MAX_IMPORT_BYTES = 5 * 1024 * 1024


# ---------------------------------------------------------------- pipelines list


@login_required
@require_GET
def home(request):
    return _home(request)


def _home(request, import_problems=None, import_error=None, status=200):
    runs = list(Run.objects.filter(owner=request.user).select_related("pipeline", "trial")[:20])
    for r in runs:  # "early terminated", as the sweep page and the Runs tab say
        r.shown_status = statuses.shown_run_status(r.status, _trial_status(r))
        r.shown_label = r.shown_status.replace("_", " ")
    return render(request, "pipelines/home.html", {
        "pipelines": request.user.pipelines.all(),
        "runs": runs,
        "import_problems": import_problems, "import_error": import_error,
    }, status=status)


def _trial_status(run: Run) -> str | None:
    try:
        return run.trial.status
    except ObjectDoesNotExist:
        return None


@login_required
@require_POST
def pipeline_new(request):
    try:
        p, _ = drafts.create(request.user, request.POST.get("name", "").strip())
    except drafts.DraftError as e:  # (the page's field takes 200 characters: a request made by hand)
        return _home(request, import_error=f"The pipeline was not created: {e}", status=400)
    return redirect("designer", pk=p.pk)


@login_required
@require_POST
def pipeline_import(request):
    """A pipeline file: imported if it can be read, then opened in the designer, which lists what is
    left to fix before it runs; a file that cannot be read lists its problems here."""
    upload = request.FILES.get("file")
    if upload is None:
        return _home(request, import_error="choose a pipeline file (.json) to import", status=400)
    if upload.size > MAX_IMPORT_BYTES:
        return _home(request, import_error=f"{upload.name} is {upload.size:,} bytes: a pipeline file may be at most {MAX_IMPORT_BYTES:,}", status=400)
    try:
        doc = drafts.read_document(upload.read(), what=upload.name)
        p, found = drafts.import_document(request.user, doc, what=upload.name, name=upload.name.rsplit(".", 1)[0])
    except drafts.Unreadable as e:
        return _home(request, import_error=str(e), import_problems=e.problems, status=400)
    except drafts.DraftError as e:
        return _home(request, import_error=f"{e}; nothing was imported", import_problems=e.problems, status=400)
    if found:
        messages.warning(request, f"Imported {p.name}, with {len(found)} problem(s) to fix before it runs: "
                                  "they are listed below the canvas.")
    else:
        messages.success(request, f"Imported {p.name}.")
    return redirect("designer", pk=p.pk)


@login_required
@require_http_methods(["GET", "POST"])
def pipeline_rename(request, pk):
    p = drafts.owned(request.user, pk)
    error = None
    if request.method == "POST":
        try:  # the revision moves on: an open designer tab learns of it on its next save
            drafts.rename(p, request.POST.get("name", ""))
        except drafts.DraftError as e:
            error = str(e)
        else:
            if request.htmx:
                return render(request, "pipelines/_row.html", {"p": p})
            return redirect("home")
    template = "pipelines/_rename.html" if request.htmx else "pipelines/rename.html"
    return render(request, template, {"p": p, "error": error}, status=400 if error else 200)


@login_required
@require_POST
def pipeline_clone(request, pk):
    p = drafts.owned(request.user, pk)
    copy = drafts.clone(p)
    messages.success(request, f"Cloned {p.name} as {copy.name}.")
    return redirect("home")


@login_required
@require_http_methods(["GET", "POST"])
def pipeline_delete(request, pk):
    """GET asks for confirmation; POST deletes."""
    p = drafts.owned(request.user, pk)
    if request.method == "POST":
        drafts.delete(p)
        messages.success(request, f"Deleted {p.name}.")
        return redirect("home")
    return render(request, "pipelines/delete.html", {"p": p, "runs": p.runs.count()})


@login_required
@require_POST
def runs_delete(request):
    """The runs ticked in Recent runs (htmx): deleted if they are over; each refusal said."""
    ids = [n for x in request.POST.getlist("runs") if (n := jsontext.whole_number(x)) is not None]
    picked = Run.objects.filter(owner=request.user, pk__in=ids)
    deleted, refused = [], []
    for run in picked.order_by("id"):
        try:
            retention.delete(run)
            deleted.append(f"#{run.pk}")
        except retention.CannotDelete as e:
            refused.append(str(e))
    if deleted:
        messages.success(request, f"Deleted run{'s' if len(deleted) > 1 else ''} {', '.join(deleted)}.")
    for reason in refused:
        messages.error(request, f"Not deleted: {reason}.")
    if not deleted and not refused:
        messages.error(request, "Tick the runs to delete first.")
    response = redirect("home")
    if request.headers.get("HX-Request"):
        response = HttpResponse(status=204, headers={"HX-Redirect": response.url})
    return response


@login_required
@require_POST
def run_open(request, pk):
    """A run that belongs to no saved pipeline (one run headless before runs were saved with one,
    or whose pipeline was deleted): saved as a pipeline of the run's name, so that it opens in the
    designer with its outputs, logs and Visualize, as any run does. A POST: it writes."""
    run = get_object_or_404(Run, pk=pk, owner=request.user)
    if run.pipeline_id is None:
        doc = {k: v for k, v in run.snapshot.items() if k != "parameter_values"}  # the run's own, not the pipeline's
        try:
            p, _ = drafts.import_document(request.user, doc, what=f"run #{run.pk}", name=run.name)
        except drafts.DraftError as e:
            return _home(request, import_error=f"Run #{run.pk} cannot be opened: {e}", import_problems=e.problems, status=400)
        Run.objects.filter(pk=run.pk, pipeline=None).update(pipeline=p)
        run.refresh_from_db(fields=["pipeline"])
        messages.info(request, f"Run #{run.pk} had no saved pipeline: it is saved as {p.name}, where it opens.")
    return redirect(f"{reverse('designer', args=[run.pipeline_id])}?run={run.pk}")


# ---------------------------------------------------------------- the designer


@login_required
@require_GET
def designer(request, pk):
    p = drafts.owned(request.user, pk)
    catalogue = get_catalogue(request.user)
    categories: dict[str, list] = {}
    for m in catalogue:
        categories.setdefault(m.category or "Other", []).append(m)
    versions = list(request.user.datasets.all())
    # the palette: each dataset once, its latest version (newest first); the page's names: every
    # version ("digits v1" where a name has several), and a name kept to follow its latest
    palette = _latest_versions(versions)
    return render(request, "pipelines/designer.html", {
        "p": p, "categories": categories, "datasets": palette, "max_upload_bytes": settings.DATASET_MAX_UPLOAD_BYTES,
        "boot": {"id": p.id, "name": p.name, "revision": p.revision, "draft": p.draft, "modules": catalogue.describe(),
                 "earlier_modules": [m.describe() for m in catalogue.every_version() if m is not catalogue.get(m.kind)],
                 "datasets": _named_versions(versions), "statuses": statuses.for_page(), "compute_targets": _compute_targets(),
                 "problems": [x.as_dict() for x in drafts.problems(p.draft, p.owner_id)],
                 # "Imported ...": shown over the canvas (a note that goes, or a warning that goes with the problems)
                 "messages": [{"text": str(m), "level": m.level_tag} for m in messages.get_messages(request)]},
    })


@login_required
@require_POST
def node_pane(request, pk):
    """The right pane for one node, generated from its module's declaration. Body: `node`, the
    node's JSON as it is on the canvas; values already invalid are marked with the server's message.
    A parameter bound to a pipeline parameter (node "bindings") shows the binding instead of its
    input; the page script (its binding module) offers the pipeline's parameters to bind to."""
    drafts.owned(request.user, pk)
    try:
        node = jsontext.loads(request.POST.get("node", ""))
        kind = node["kind"]
        if not all(isinstance(node.get(k) or {}, dict) for k in ("parameters", "run_settings", "bindings")):
            raise TypeError
    except (ValueError, KeyError, TypeError):
        return HttpResponseBadRequest("`node` must be a node of the pipeline, as JSON")
    catalogue = get_catalogue(request.user)
    module = catalogue.for_node(node)
    values = node.get("parameters") or {}
    bindings = node.get("bindings") if isinstance(node.get("bindings"), dict) else {}
    fields = []
    for param in [p for p in module.params if not p.filled_by_server] if module else []:
        value = values.get(param.name, param.default)
        fields.append({"p": param, "value": value, "error": param.check(value) if param.name in values else None,
                       "range": param._range_text() if hasattr(param, "_range_text") else "",
                       "bound": bindings.get(param.name)})
        if kind == DATASET_KIND and param.name == "dataset":
            fields[-1].update(_dataset_picker(request.user, value))
            if isinstance(value, str):  # a name (its latest version) or "name:N": the picker says what it finds
                fields[-1]["error"] = None
    declared = {param.name for param in module.params} if module else set()
    stray = sorted((k, v) for k, v in bindings.items() if k not in declared)  # shown, so that they can be unbound
    settings = node.get("run_settings") or {}
    return render(request, "pipelines/_pane.html", {
        "node": node, "module": module, "fields": fields, "stray_bindings": stray, "twin": request.POST.get("twin") == "1",
        "node_count": settings.get("node_count", 1), "process_count": settings.get("process_count_per_node", 1),
        "timeout_seconds": settings.get("timeout_seconds", 0), "max_timeout": graph.MAX_TIMEOUT_SECONDS,
        "max_retries": settings.get("max_retries", graph.DEFAULT_MAX_RETRIES), "max_max_retries": graph.MAX_RETRIES,
        "max_run_setting": graph.MAX_RUN_SETTING, "latest_version": max(catalogue.versions(kind), default=None),
        **_target_choice(settings.get("compute_target")),
    })


def _compute_targets() -> list[dict]:
    """The targets the workers joined, for the page's selects: [{name, live}]."""
    return [{"name": t.name, "live": len(t.live)} for t in sorted(workers_of.targets().values(), key=lambda t: t.name)]


def _target_choice(current) -> dict:
    targets = _compute_targets()
    current = current if isinstance(current, str) else ""
    return {"compute_target": current, "compute_targets": targets,
            "compute_target_known": any(t["name"] == current for t in targets)}


def _latest_versions(versions: list[Dataset]) -> list[dict]:
    """Each name once, as its latest version: {id, name, version, size}, newest first."""
    latest: dict[str, Dataset] = {}
    for d in versions:
        if d.name not in latest or d.version > latest[d.name].version:
            latest[d.name] = d
    return [{"id": d.id, "name": d.name, "version": d.version, "size": d.size}
            for d in sorted(latest.values(), key=lambda d: (d.created_at, d.id), reverse=True)]


def _named_versions(versions: list[Dataset]) -> list[dict]:
    """{id, name} of every version as the canvas names it ("digits v1" where a name has several), and
    {id: name, name: "digits (latest)"} for a name kept to follow its latest version."""
    count: dict[str, int] = {}
    for d in versions:
        count[d.name] = count.get(d.name, 0) + 1
    named = [{"id": d.id, "name": d.name if count[d.name] == 1 else f"{d.name} v{d.version}", "size": d.size,
              "base": d.name, "version": d.version}
             for d in versions]
    return named + [{"id": name, "name": f"{name} (latest)"} for name in sorted(count)]


def _dataset_picker(user, value) -> dict:
    """The Dataset module's Dataset parameter as a picker of the user's datasets (the value stays
    the version's id; a name with several versions is offered to follow its latest too, kept as the
    name): its options, and a chosen id (or name) that is none of theirs shown as not found."""
    versions = list(Dataset.objects.filter(owner=user).only("id", "name", "version", "size").order_by("name", "-version"))
    options: list[dict] = []
    for d in versions:
        several = sum(v.name == d.name for v in versions) > 1
        if several and (not options or options[-1]["name"] != d.name):
            options.append({"value": d.name, "name": d.name, "text": f"{d.name}: latest version (now v{d.version})",
                            "size": None})
        options.append({"value": d.id, "name": d.name,
                        "text": f"{d.name} v{d.version}" if several else d.name, "size": d.size})
    picker: dict = {"datasets": options}
    if value is not None and value not in {o["value"] for o in options}:
        if isinstance(value, str):
            found, why = datasets.by_reference(user, value)
            if found is not None:  # "digits:2", or a name with one version: offered as it is
                options.insert(0, {"value": value, "name": found.name, "text": f"{value} (v{found.version})",
                                   "size": None})
            else:
                picker.update(missing=value, pane_error=why)
        elif isinstance(value, int) and not isinstance(value, bool):
            picker.update(missing=value, pane_error=f"you have no dataset with id {value} (deleted?): choose one of "
                                                    "yours, or upload it again")
    return picker


# ---------------------------------------------------------------- Visualize


@login_required
@require_GET
def node_visualize(request, pk, node_id):
    """The Visualize pane of one node of a run: a preview of each of its outputs."""
    nr = drafts.node_run(request.user, pk, node_id)
    wrong_only = request.GET.get("wrong") == "1"
    module = get_catalogue(request.user).get(nr.kind)  # named as on the canvas (its id as a tooltip)
    # each output by its port's label and its type in words, as the canvas names them
    ports = {p.name: p for p in module.outputs} if module else {}
    outputs = [{"port": port, "label": ports[port].label if port in ports else port,
                "what": ports[port].type.words if port in ports else "", **_preview(nr, port, wrong_only)}
               for port in sorted(nr.outputs)]
    return render(request, "pipelines/_visualize.html", {"nr": nr, "run_id": pk, "outputs": outputs, "wrong_only": wrong_only,
                                                         "label": module.label if module else nr.kind,
                                                         "status": nr.status.replace("_", " ")})


def _preview(nr: NodeRun, port: str, wrong_only: bool) -> dict:
    try:
        with artifacts.readable_output(output_key(nr, port)) as folder:
            return visualize.preview(folder, wrong_only)
    except BadRequest as e:  # a folder outside the store, or an old node id such as `..`
        return {"type": "unknown", "error": str(e)}
    except StoreError as e:
        return {"type": "unknown", "error": f"the artifact store cannot be read now: {e}"}


@login_required
@require_GET
def node_image(request, pk, node_id, port, index):
    """One image of an ImageDirectory output: a file of the store (or of the data folder, for the
    embedded app's images), streamed."""
    nr = drafts.node_run(request.user, pk, node_id)
    try:
        key = output_key(nr, port) if port in nr.outputs else None
        if key is None:
            raise Http404("no such image")
        local = artifacts.local_output(key)
        if local is not None:
            path = visualize.image_path(local, index, [settings.ARTIFACT_ROOT, settings.DATA_DIR])
            if not path:
                raise Http404("no such image")
            return FileResponse(path.open("rb"), content_type=mimetypes.guess_type(path.name)[0] or "application/octet-stream")
        with artifacts.readable_output(key) as folder:
            item = visualize.image_item(folder, index)
        image = item and (artifacts.store_key_of_path(item) if item.startswith("/") else artifacts.file_key(key, item))
        if not image or Path(image).suffix.lower() not in visualize.IMAGE_SUFFIXES:
            raise Http404("no such image")
        body = artifact_store.get().open(image)
    except (BadRequest, paths.OutsideFolder, NotInStore):
        raise Http404("no such image")
    except StoreError:
        return HttpResponse("the artifact store cannot be read now", status=503, content_type="text/plain")
    response = FileResponse(body, content_type=mimetypes.guess_type(image)[0] or "application/octet-stream")
    response["Content-Length"] = str(body.length)
    return response


# ---------------------------------------------------------------- compute


@login_required
@require_GET
def compute(request):
    """The compute targets and their workers (one worker = one node of a distributed job); htmx
    refreshes the tables."""
    rows = workers(request.user)
    return render(request, "pipelines/compute.html", {"workers": rows, "targets": target_rows(rows)})
