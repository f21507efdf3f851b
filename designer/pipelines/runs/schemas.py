"""What the pipelines and runs API (api.py) takes and answers, as JSON Schemas for its OpenAPI
document (designer/pipelines/openapi.py): the shapes of pipeline_json, run_json, node_json and the
module catalogue's descriptions."""
from __future__ import annotations

from designer.pipelines.models import Source
from designer.pipelines.openapi import ANY, BOOL, INT, NUM, PROBLEM, STR, TIME, arr, late, maybe, named, obj
from designer.pipelines.runs import document_schema, labels

PORT = obj({"name": STR, "label": STR, "type": STR, "optional": BOOL, "what": STR},
           {"help": STR, "accepts": arr(STR), "accepts_what": arr(STR)})
MODULE = named("Module", obj(
    {"kind": STR, "label": STR, "category": STR, "version": INT, "description": STR, "inputs": arr(PORT),
     "outputs": arr(PORT), "params": arr(obj({"name": STR})), "distributed": BOOL, "metrics": arr(STR)},
    {"metric_step": STR, "timeout_setting": BOOL,
     "component": obj({"origin": STR, "command": ANY, "digest": STR, "arguments": obj(more=STR)})}))
MODULES = obj({"modules": arr(MODULE)})
VALIDATION = obj({"valid": BOOL, "problems": arr(PROBLEM)})
# what a client writes: every node described by its module kind (document_schema.py, from the catalogue)
DOCUMENT = late(document_schema.NAME, document_schema.schemas, document_schema.stamp)
# what a stored draft or an export holds: the file's shape, its problems maybe not fixed yet
PIPELINE_FILE = named("PipelineFile", document_schema.file_schema())

PIPELINE_SUMMARY = named("PipelineSummary", obj({"id": INT, "name": STR, "revision": INT, "updated_at": TIME,
                                                 "nodes": INT}))
PIPELINE = named("Pipeline", {"allOf": [PIPELINE_SUMMARY, obj({"draft": PIPELINE_FILE, "problems": arr(PROBLEM)})]})
PIPELINES = obj({"pipelines": arr(PIPELINE_SUMMARY)})
NEW_PIPELINE = obj(optional={"name": STR, "draft": DOCUMENT})
EDIT = obj({"revision": INT}, {"name": STR, "draft": DOCUMENT})

TRIAL = obj({"sweep": INT, "number": INT, "status": STR, "best": BOOL})
# what a person names a run by (runs/labels.py), where it came from, and its final metrics (runs/final_metrics.py)
TAGS = {**obj(more={**STR, "maxLength": labels.MAX_TAG_VALUE}), "maxProperties": labels.MAX_TAGS,
        "description": "{key: value}; a key of 1 to 64 characters, a value of at most 256"}
SOURCE = {"type": "string", "enum": [v for v, _ in Source.choices],
          "description": "where it was submitted from: the page, the API (a personal token), run_pipeline (headless), a sweep's trial; "
                         "unknown for runs from before it was recorded"}
METRIC = named("FinalMetric", obj({"last": NUM, "best": maybe(NUM), "node": STR, "steps": INT}))
LABELS = {"name": {**STR, "minLength": 1, "maxLength": labels.MAX_NAME, "description": "the run's name (default: the pipeline's)"},
          "experiment": {**STR, "minLength": 1, "maxLength": labels.MAX_EXPERIMENT,
                         "description": "the experiment it is listed under (default: the pipeline's name)"},
          "tags": {"anyOf": [TAGS, {**arr(STR), "maxItems": labels.MAX_TAGS}]}}
LOST_ATTEMPT = named("LostAttempt", obj({
    "attempt": INT, "worker": STR, "reason": STR, "started_at": maybe(TIME), "lost_at": maybe(TIME), "retried_at": TIME}))
NODE = named("NodeRun", obj({
    "status": STR, "kind": STR, "error": STR, "worker": STR, "queued_at": maybe(TIME), "started_at": maybe(TIME),
    "finished_at": maybe(TIME), "duration": maybe(NUM), "reused_from_run": maybe(INT), "outputs": arr(STR),
    "attempt": {**INT, "description": "1, or the attempt that runs now when its worker was lost before (Max retries)"},
    "attempts": arr(LOST_ATTEMPT)}))
RUN_SUMMARY = named("RunSummary", obj({
    "id": INT, "name": STR, "status": STR, "pipeline": maybe(INT), "shown_status": STR, "submitted_by": STR,
    "submitted_at": TIME, "started_at": maybe(TIME), "finished_at": maybe(TIME), "duration": maybe(NUM),
    "parameters": obj(), "trial": maybe(TRIAL), "experiment": STR, "tags": TAGS, "source": SOURCE, "metrics": obj(more=METRIC)}))
RUN_DATASET = obj({"node": STR, "id": INT, "name": STR, "version": INT})  # the dataset version a Dataset node read
RUN = named("Run", {"allOf": [RUN_SUMMARY, obj({"nodes": obj(more=NODE), "message": STR, "now": TIME,
                                                "datasets": arr(RUN_DATASET)})]})
RUNS = obj({"runs": arr(RUN_SUMMARY)})
SUBMIT = obj(optional={"regenerate": {"anyOf": [BOOL, arr(STR)]}, "parameters": obj(), "compute_target": STR, **LABELS})
EVENTS = obj({"events": arr(obj({"id": INT, "type": STR, "node": maybe(STR), "data": ANY, "at": TIME})),
              "status": STR})

FILE = obj({"path": STR, "size": INT})
LOG = obj({"file": STR, "files": arr(STR), "text": STR, "offset": INT, "next_offset": INT, "size": INT,
           "status": STR, "error": STR})
FILES = obj({"outputs": obj(more=arr(FILE)), "logs": arr(FILE), "status": STR, "error": STR, "parameters": obj(),
             "run_settings": obj(), "devices": arr(obj()), "attempt": INT, "attempts": arr(LOST_ATTEMPT), "worker": STR})

WORKER = obj({"hostname": STR, "cpus": INT, "gpus": INT, "alive": BOOL, "busy": BOOL, "compute_target": STR,
              "last_seen": TIME, "running": arr(obj()), "cache": maybe(obj())})
COMPUTE = obj({"workers": arr(WORKER), "targets": arr(obj({"name": STR, "workers": arr(STR), "live_workers": INT,
                                                           "cpus": INT, "gpus": INT}))})
