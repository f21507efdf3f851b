"""Where a registered model came from, read off its run's snapshot once, when it is registered:
the run, its pipeline, the node, the datasets upstream of its training and validation inputs,
its parameters, the model it started from, and its best epoch's metrics (model.yaml). For a
component's model: the datasets upstream of each of its inputs (an input named for validation is
the validation data; the others the training data), and the last value of each metric it logged."""
from __future__ import annotations

from designer.engine import graph
from designer.engine import statuses as st
from designer.pipelines.catalogue.service import get_catalogue
from designer.pipelines.models import Dataset, Event, NodeRun, Run

DATASET_KINDS = {"dataset": "dataset", "registered_model": "model"}  # source modules: the parameter naming what they read
INPUTS = {"training": "training_dataset", "validation": "validation_dataset"}
METRICS = ("best_epoch", "epochs_run", "validation_loss", "validation_top1_accuracy")


def label_of(node: dict) -> str:
    module = get_catalogue().get(node.get("kind", ""))
    return module.label if module else node.get("kind", "?")


def of(run: Run, node: dict, info: dict) -> dict:
    """The lineage of the model that `node` (a Train PyTorch Model of `run`) trained; `info` is its model.yaml."""
    doc = run.snapshot
    return {
        "run": {"id": run.id, "name": run.name},
        "pipeline": {"id": run.pipeline_id, "name": run.pipeline.name} if run.pipeline_id else None,
        "node": {"id": node["id"], "kind": node["kind"], "label": label_of(node)},
        "datasets": _datasets(doc, node["id"]),
        "parameters": dict(node.get("parameters") or {}),
        "parameter_values": dict(run.parameter_values or {}),
        "started_from": _started_from(doc, node["id"]),
        "metrics": _metrics(info) or _logged(run, node["id"]),
        "model_name": info.get("model_name"),
        "classes": list(info.get("classes") or []),
    }


def _datasets(doc: dict, node_id: str) -> dict[str, list[dict]]:
    """{"training": [...], "validation": [...]}: Train's two inputs, or every input of a component."""
    inputs = graph.inputs_of(doc, node_id)
    if set(INPUTS.values()) & set(inputs):
        return {role: _datasets_upstream(doc, node_id, port) for role, port in INPUTS.items()}
    found: dict[str, list[dict]] = {"training": [], "validation": []}
    for port in inputs:
        role = "validation" if "val" in port.lower() else "training"
        found[role] += [d for d in _datasets_upstream(doc, node_id, port) if d not in found[role]]
    return found


def _logged(run: Run, node_id: str) -> dict:
    """The last value of each metric the node logged (in the run that computed it, when reused)."""
    nr = NodeRun.objects.filter(run=run, node_id=node_id).select_related("reused_from").first()
    source = (nr.reused_from.run_id, nr.reused_from.node_id) if nr and nr.status == st.REUSED and nr.reused_from else (run.id, node_id)
    last: dict = {}
    for data in Event.objects.filter(run_id=source[0], node_id=source[1], type="metric").order_by("id").values_list("data", flat=True):
        name, value = (data.get("name"), data.get("value")) if isinstance(data, dict) else (None, None)
        if isinstance(name, str) and isinstance(value, (int, float)) and not isinstance(value, bool):
            last[name] = value
    return last


def _datasets_upstream(doc: dict, node_id: str, port: str) -> list[dict]:
    """The Dataset nodes that feed input `port` of `node_id`, however many steps away."""
    source = graph.inputs_of(doc, node_id).get(port)
    if source is None:
        return []
    upstream, seen, stack = graph.upstream_of(doc), set(), [source[0]]
    while stack:
        current = stack.pop()
        if current not in seen:
            seen.add(current)
            stack.extend(upstream.get(current, ()))
    nodes = [n for n in doc["nodes"] if n["id"] in seen and n.get("kind") == "dataset"]
    ids = [n.get("parameters", {}).get("dataset") for n in nodes]
    known = {pk: (name, version) for pk, name, version in
             Dataset.objects.filter(pk__in=[i for i in ids if isinstance(i, int)]).values_list("pk", "name", "version")}
    # each with the version it was (the run's snapshot holds the version's id: a name followed its latest)
    return [{"id": i, "name": known[i][0], "version": known[i][1], "node": n["id"]} if i in known else
            {"id": i, "name": f"dataset {i} (deleted)", "node": n["id"]} for n, i in zip(nodes, ids)]


def _started_from(doc: dict, node_id: str) -> dict | None:
    """The module that fed the model input: ResNet / DenseNet (with its parameters) or a registered model."""
    source = graph.inputs_of(doc, node_id).get("untrained_model")
    node = next((n for n in doc["nodes"] if source and n["id"] == source[0]), None)
    if node is None:
        return None
    return {"node": node["id"], "kind": node["kind"], "label": label_of(node),
            "parameters": {k: v for k, v in (node.get("parameters") or {}).items() if k != "stored_folder"}}


def _metrics(info: dict) -> dict:
    metrics = {k: info[k] for k in METRICS if info.get(k) is not None}
    best = info.get("best_epoch")
    for entry in info.get("history") or []:
        if entry.get("epoch") == best:  # every metric of the kept epoch
            metrics.update({k: v for k, v in entry.items() if k != "epoch" and isinstance(v, (int, float))})
    return metrics
