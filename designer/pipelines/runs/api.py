"""The JSON API of pipelines and runs, used by the page and by scripts (the plumbing every part of
the API shares, sign-in and the {"error", "problems"} answers, is web.py's). A user only ever sees
their own pipelines and runs: anything else answers 404."""
from __future__ import annotations

from pathlib import Path

from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404
from django.utils import timezone

from designer.engine import graph, logstore, paths, statuses
from designer.engine.problems import labelled
from designer.engine.store import NotInStore, StoreError
from designer.pipelines import artifact_store, downloads
from designer.pipelines.authoring import drafts
from designer.pipelines.catalogue.service import get_catalogue
from designer.pipelines.compute.rows import targets as target_rows
from designer.pipelines.compute.rows import workers
from designer.pipelines.compute.workers import machines
from designer.pipelines.compute.workers import targets as compute_targets
from designer.pipelines.datasets import service as datasets
from designer.pipelines.models import NodeRun, Pipeline, Run, Trial
from designer.pipelines.openapi import DOWNLOAD, INT, STR, Op, obj
from designer.pipelines.runs import artifacts, events, labels, retention
from designer.pipelines.runs import schemas as s
from designer.pipelines.runs import service as runs
from designer.pipelines.web import BadRequest, api, body_json
from sdk import layout

EMPTY_PIPELINE = drafts.EMPTY_PIPELINE  # read here by tests/e2e/helpers.py; drafts.py owns it


# ---------------------------------------------------------------- modules, validation


@api("GET", doc={"GET": Op("The module types you may put on a canvas (built-in modules and components), with their ports and parameters", s.MODULES)})
def module_list(request):
    return JsonResponse({"modules": get_catalogue(request.user).describe()})


@api("POST", doc={"POST": Op("Check a pipeline document without saving it: every problem found, each naming its node, port or parameter", s.VALIDATION, body=s.DOCUMENT)})
def validate(request):
    try:
        doc = graph.parse_text(request.body)
    except graph.PipelineInvalid as e:
        return JsonResponse({"valid": False, "problems": [p.as_dict() for p in e.problems]})
    catalogue = get_catalogue(request.user)
    doc, named = datasets.with_names_resolved(request.user, doc)  # a dataset given by name, as submit reads it
    seen = {(p.node, p.param) for p in named}  # "no dataset named 'x'" says more than "no dataset chosen"
    problems = labelled(named, doc, catalogue) + [
        p for p in graph.validate(doc, catalogue, machines(), compute_targets()) if (p.node, p.param) not in seen]
    return JsonResponse({"valid": not problems, "problems": [p.as_dict() for p in problems]})


# ---------------------------------------------------------------- pipelines


def pipeline_json(p: Pipeline, with_draft=True, problems: list | None = None) -> dict:
    """`problems`: the draft's, when the caller has just validated it (a 5,000-node draft takes a
    noticeable time to validate: once per request)."""
    d = {"id": p.id, "name": p.name, "revision": p.revision, "updated_at": p.updated_at.isoformat(),
         "nodes": len(p.draft.get("nodes", []))}
    if with_draft:
        d["draft"] = p.draft
        d["problems"] = [x.as_dict() for x in (drafts.problems(p.draft, p.owner_id) if problems is None else problems)]
    return d


@api("GET", "POST", doc={
    "GET": Op("Your pipelines", s.PIPELINES),
    "POST": Op("Make a pipeline, empty or from a draft; its `problems` say what is left to fix before it runs", s.PIPELINE, status=201,
               body=s.NEW_PIPELINE)})
def pipelines(request):
    if request.method == "GET":
        return JsonResponse({"pipelines": [pipeline_json(p, False) for p in request.user.pipelines.all()]})
    data = body_json(request)
    p, problems = drafts.create(request.user, data.get("name"), data.get("draft"))
    return JsonResponse(pipeline_json(p, problems=problems), status=201)


@api("POST", doc={"POST": Op("Import a pipeline file (the body, or a form's field `file`); its `problems` say what is left to fix", s.PIPELINE,
                            status=201, body=s.DOCUMENT, form=obj({"file": DOWNLOAD}))})
def pipeline_import(request):
    """Body: a pipeline file (or an upload named `file`): imported if it can be read, with its
    `problems` (what is left to fix before it runs); a file that cannot be read is a 400."""
    if request.content_type in ("multipart/form-data", "application/x-www-form-urlencoded") and "file" not in request.FILES:
        raise BadRequest("send the pipeline file as the form's field `file` (or as the request body itself)")
    raw = request.FILES["file"].read() if "file" in request.FILES else request.body
    p, found = drafts.import_document(request.user, drafts.read_document(raw))
    return JsonResponse(pipeline_json(p, problems=found), status=201)


@api("GET", "PUT", "DELETE", doc={
    "GET": Op("A pipeline with its draft and the draft's problems", s.PIPELINE),
    "PUT": Op("Save a pipeline's draft or name; 409 when it changed since the `revision` you edited (nothing is overwritten)",
              s.PIPELINE, body=s.EDIT, errors=(409,)),
    "DELETE": Op("Delete a pipeline (its runs stay)", status=204)})
def pipeline_detail(request, pk):
    p = drafts.owned(request.user, pk)
    if request.method == "GET":
        return JsonResponse(pipeline_json(p))
    if request.method == "DELETE":
        drafts.delete(p)
        return HttpResponse(status=204)
    data = body_json(request)
    if "revision" not in data:
        raise BadRequest("say which revision you edited: `revision` is required")
    problems = drafts.save(p, data["revision"], draft=data.get("draft"), name=data.get("name"))
    return JsonResponse(pipeline_json(p, problems=problems))


@api("POST", doc={"POST": Op("Copy a pipeline", s.PIPELINE, status=201)})
def pipeline_clone(request, pk):
    return JsonResponse(pipeline_json(drafts.clone(drafts.owned(request.user, pk))), status=201)


@api("GET", doc={"GET": Op("The pipeline file (JSON) of a pipeline: what pipelines/import and run_pipeline read", s.PIPELINE_FILE)})
def pipeline_export(request, pk):
    p = drafts.owned(request.user, pk)
    response = HttpResponse(drafts.export_text(p), content_type="application/json")
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in p.name) or "pipeline"
    response["Content-Disposition"] = f'attachment; filename="{safe}.json"'
    return response


# ---------------------------------------------------------------- runs


def run_json(run: Run, with_nodes=True) -> dict:
    trial = _trial_of(run)
    d = {"id": run.id, "name": run.name, "status": run.status, "pipeline": run.pipeline_id,
         "shown_status": statuses.shown_run_status(run.status, trial and trial["status"]),
         "submitted_by": run.owner.get_username(), "submitted_at": run.submitted_at.isoformat(),
         "started_at": run.started_at and run.started_at.isoformat(),
         "finished_at": run.finished_at and run.finished_at.isoformat(),
         "duration": run.duration,
         "parameters": run.parameter_values, "trial": trial,
         "experiment": run.experiment, "tags": run.tags, "source": run.source, "metrics": run.metrics}
    if with_nodes:
        d["nodes"] = {nr.node_id: node_json(nr) for nr in run.nodes.select_related("worker", "reused_from")}
        d["message"] = runs.waiting_message(run)
        d["now"] = timezone.now().isoformat()  # the page's clock may differ: a running node's time is counted on this one
        # the dataset version each Dataset node read (its name may have followed the latest)
        d["datasets"] = [{"node": u.node_id, "id": u.dataset_id, "name": u.dataset.name, "version": u.dataset.version}
                         for u in run.dataset_uses.select_related("dataset").order_by("node_id")]
    return d


def _trial_of(run: Run) -> dict | None:
    try:
        trial = run.trial
    except Trial.DoesNotExist:
        return None
    # best: the trial its sweep named best when it ended (the designer opens on it after a sweep)
    return {"sweep": trial.sweep_id, "number": trial.number, "status": trial.status,
            "best": trial.sweep.best_trial_id == trial.pk}


def node_json(nr: NodeRun) -> dict:
    return {"status": nr.status, "kind": nr.kind, "error": nr.error, "worker": nr.worker_label,
            "queued_at": nr.queued_at and nr.queued_at.isoformat(),
            "started_at": nr.started_at and nr.started_at.isoformat(),
            "finished_at": nr.finished_at and nr.finished_at.isoformat(),
            "duration": nr.duration, "reused_from_run": nr.reused_from.run_id if nr.reused_from_id else None,
            "outputs": sorted(nr.outputs), "attempt": nr.attempt, "attempts": nr.attempts}


@api("GET", "POST", doc={
    "GET": Op("The runs of a pipeline", s.RUNS),
    "POST": Op("Submit a run of the pipeline's draft, optionally with a `name`, an `experiment` (default: the pipeline's name) "
               "and `tags`; a draft that cannot run is a 400 naming every problem", s.RUN, status=201,
               body=s.SUBMIT)})
def pipeline_runs(request, pk):
    p = drafts.owned(request.user, pk)
    if request.method == "GET":
        return JsonResponse({"runs": [run_json(r, False) for r in p.runs.select_related("owner", "trial__sweep")]})
    data = body_json(request)
    regenerate = data.get("regenerate", False)
    if not isinstance(regenerate, bool) and not (isinstance(regenerate, list) and all(isinstance(n, str) for n in regenerate)):
        raise BadRequest(f"`regenerate` is true, false or a list of node ids, got {regenerate!r}")
    regenerate = set(regenerate) if isinstance(regenerate, list) else regenerate
    values = data.get("parameters") or {}
    if not isinstance(values, dict):
        raise BadRequest(f"`parameters` is an object of pipeline parameter values, got {values!r}")
    target = data.get("compute_target")  # this run's default compute target, instead of the pipeline's
    if target is not None and not isinstance(target, str):
        raise BadRequest(f"`compute_target` is the name of a compute target (\"\": any worker), got {str(target)[:80]!r}")
    doc = p.draft if target is None else {**p.draft, "compute_target": target}
    given = labels.from_body(data)  # name, experiment, tags: checked before anything is stored
    try:
        run = runs.submit(request.user, doc, pipeline=p, name=p.name, regenerate=regenerate, values=values, labels=given,
                          source=labels.source_of(request))
    except graph.PipelineInvalid as e:
        raise BadRequest(f"the pipeline cannot run: {len(e.problems)} problem(s)", e.problems)
    return JsonResponse(run_json(run), status=201)


@api("GET", doc={"GET": Op("Your latest 200 runs, newest first", s.RUNS)})
def run_list(request):
    return JsonResponse({"runs": [run_json(r, False) for r in Run.objects.filter(owner=request.user).select_related("owner", "trial__sweep")[:200]]})


@api("GET", "DELETE", doc={
    "GET": Op("A run with its nodes: statuses, times, workers, outputs, and why it waits if it does", s.RUN),
    "DELETE": Op("Delete a finished run (409 while it runs); its files go once no other run reuses them", obj({"deleted": INT}),
                 errors=(409,))})
def run_detail(request, pk):
    run = get_object_or_404(Run.objects.select_related("owner"), pk=pk, owner=request.user)
    if request.method == "DELETE":
        try:
            retention.delete(run)  # hidden now; its folders go once no other run reuses them
        except retention.CannotDelete as e:
            raise BadRequest(str(e), status=409)
        return JsonResponse({"deleted": pk})
    return JsonResponse(run_json(run))  # reading only: lost nodes and the outbox are the maintenance loop's


@api("POST", doc={"POST": Op("Cancel a run: its queued nodes are not started, its running ones are stopped", s.RUN)})
def run_cancel(request, pk):
    run = get_object_or_404(Run, pk=pk, owner=request.user)
    if not run.finished:
        runs.cancel(run)
        run.refresh_from_db()
    return JsonResponse(run_json(run))


@api("GET", doc={"GET": Op("A run's events after the event id `after` (statuses, metrics, progress), at most 500", s.EVENTS,
                          query={"after": INT})})
def run_events(request, pk):
    run = get_object_or_404(Run, pk=pk, owner=request.user)
    after = _int(request.GET.get("after"), 0)
    return JsonResponse({"events": events.since(run.id, after), "status": run.status})


# ---------------------------------------------------------------- a node's files and logs


def _int(raw, default: int) -> int:
    try:
        return max(0, int(raw))
    except (TypeError, ValueError):
        return default


def _source(nr: NodeRun) -> NodeRun:
    return nr.reused_from or nr  # a reused node shows the files and logs of the run that made its outputs


def _logs_key(nr: NodeRun) -> str:
    source = _source(nr)
    return f"{_checked(artifacts.node_key, source.run_id, source.node_id)}/{layout.LOG_DIR}"


def output_key(nr: NodeRun, port: str) -> str:
    """The store key of the output `port` of a node, if the node that made it has an id that names
    a folder of its run (an old run may hold `..`) and the output lies in the store."""
    source = _source(nr)
    _checked(artifacts.node_key, source.run_id, source.node_id)
    return _checked(artifacts.output_key, nr.outputs[port])


def _checked(path_of, *parts):
    try:
        return path_of(*parts)
    except paths.OutsideFolder as e:
        raise BadRequest(f"these files cannot be shown: {e}")


def _stored(read, *args):
    """What the store answers; a store that is away is a 503 naming it, not a 500."""
    try:
        return read(*args)
    except NotInStore:
        raise
    except StoreError as e:
        raise BadRequest(f"the artifact store cannot be read now: {e}", status=503)


def _logs(nr) -> list[dict]:
    """The node's log files, rank 0's first (sdk.layout.log_order)."""
    source = _source(nr)
    _checked(artifacts.node_key, source.run_id, source.node_id)
    found = {f["path"]: f for f in _stored(artifacts.list_area, source.run_id, source.node_id, layout.LOG_DIR)}
    return [found[name] for name in layout.log_order(list(found))]


@api("GET", doc={"GET": Op("A chunk of a node's log from a byte offset (the live tail): pass `next_offset` back as `offset`", s.LOG,
                          query={"file": STR, "offset": INT}, errors=(503,))})
def node_log(request, pk, node_id):
    nr = drafts.node_run(request.user, pk, node_id)
    names = layout.log_order([f["path"] for f in _logs(nr)])
    name = request.GET.get("file") or (names[0] if names else layout.DRIVER_LOG)
    if name not in names and names:
        raise BadRequest(f"no log named {name!r}; this node's logs: {', '.join(names)}", status=404)
    key = _checked(artifacts.file_key, _logs_key(nr), name)
    chunk = _stored(logstore.read_stored, artifact_store.get(), key, _int(request.GET.get("offset"), 0))
    return JsonResponse({"file": name, "files": names, "text": chunk.text, "offset": chunk.offset,
                         "next_offset": chunk.next_offset, "size": chunk.size, "status": nr.status, "error": nr.error})


@api("GET", doc={"GET": Op("A node's output files and logs, the values it ran with and the devices it trained on", s.FILES, errors=(503,))})
def node_files(request, pk, node_id):
    nr = drafts.node_run(request.user, pk, node_id)
    node = next((n for n in nr.run.snapshot.get("nodes", []) if n.get("id") == node_id), {})
    return JsonResponse({"outputs": {port: _stored(artifacts.list_output, output_key(nr, port)) for port in sorted(nr.outputs)},
                         "logs": _logs(nr), "status": nr.status, "error": nr.error,
                         # its worker was lost before: which attempt this is, and what became of the earlier ones
                         "attempt": nr.attempt, "attempts": nr.attempts, "worker": nr.worker_label,
                         # what it ran with: the values frozen at submit (pipeline parameters' values put in)
                         "parameters": node.get("parameters", {}), "run_settings": node.get("run_settings", {}),
                         # the device each process trained on (GPU name and memory, or the CPU)
                         "devices": _checked(artifacts.devices_of, _source(nr).run_id, node_id)})


@api("GET", doc={"GET": Op("Download one file of a node's output (area: the output's port) or of its logs (area: logs)", DOWNLOAD,
                          content="application/octet-stream", errors=(503,))})
def node_file_download(request, pk, node_id, area, path):
    """Streamed from the store a piece at a time (the web process holds one piece of it)."""
    nr = drafts.node_run(request.user, pk, node_id)
    if area != "logs" and area not in nr.outputs:
        raise Http404
    base = _logs_key(nr) if area == "logs" else output_key(nr, area)
    try:
        key = artifacts.file_key(base, path)
        fileobj = _stored(artifact_store.get().open, key)
    except (paths.OutsideFolder, NotInStore):
        raise Http404
    return downloads.file_response(request, fileobj, Path(path).name)


@api("GET", doc={"GET": Op("The workers and compute targets: cores, GPUs, what runs where", s.COMPUTE)})
def compute(request):
    rows = workers(request.user)
    return JsonResponse({"workers": rows, "targets": [{**t, "workers": [r["hostname"] for r in t["workers"]]}
                                                      for t in target_rows(rows)]})
