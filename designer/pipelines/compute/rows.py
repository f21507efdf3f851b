"""The workers as compute: the compute targets they joined, what each worker offers (cores, GPUs
by name and memory, a CUDA that cannot start), whether it is busy and with what (the Compute page
and GET /api/compute). A worker that shut down is not listed (its row stays for the nodes it ran,
and its target stays known: designer/pipelines/compute/workers.py targets())."""
from __future__ import annotations

from collections import defaultdict

from django.conf import settings
from django.utils import timezone

from designer.engine import statuses as st
from designer.pipelines.catalogue.service import get_catalogue
from designer.pipelines.compute import workers as live
from designer.pipelines.models import NodeLaunch, NodeRun, Worker


def workers(user=None) -> list[dict]:
    """Every worker that did not shut down; `user`: whose runs are named in "running" (another
    user's run is only said to be one)."""
    now = timezone.now()
    rows = []
    running = _running(user)
    # busy: a worker running a node, or one node of a distributed job that another worker runs
    for w in Worker.objects.filter(stopped_at__isnull=True).annotate(busy=live.is_busy()).order_by("hostname"):
        seconds = (now - w.last_seen).total_seconds()
        rows.append({"hostname": w.hostname, "address": w.address, "cpus": w.cpus, "gpus": w.gpus,
                     "units": w.units, "concurrency": w.concurrency, "last_seen": w.last_seen.isoformat(),
                     "seconds_since_seen": round(seconds, 1), "alive": seconds < settings.LOST_AFTER_SECONDS,
                     "busy": bool(w.busy), "compute_target": w.compute_target,
                     # what its machine lists, and why it offers none of them when CUDA cannot start
                     "gpu_inventory": w.gpu_inventory if isinstance(w.gpu_inventory, list) else [],
                     "cuda_problem": w.cuda_problem, "running": running.get(w.pk, []),
                     # the pretrained weights it has (the modules' pre-flight checks read them)
                     "weights_folder": w.weights.get("folder", ""), "weights": w.weights.get("files", []),
                     # with a bucket store: its cache of outputs (size, and how often inputs were found there)
                     "cache": _cache_row(w.cache)})
    return rows


def _cache_row(stats) -> dict | None:
    if not isinstance(stats, dict) or not stats:
        return None
    number = {k: int(v) for k, v in stats.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    asked = number.get("hits", 0) + number.get("misses", 0)
    return {**number, "hit_rate": round(number.get("hits", 0) / asked, 3) if asked else None}


def targets(rows: list[dict]) -> list[dict]:
    """The compute targets of `rows` (workers()), each with its workers and what they add up to;
    a target all of whose workers shut down is listed with none (its nodes wait for one)."""
    by_target = defaultdict(list)
    for name in live.targets():
        by_target[name] = []
    for row in rows:
        by_target[row["compute_target"]].append(row)
    found = []
    for name, members in sorted(by_target.items()):
        alive = [r for r in members if r["alive"]]
        found.append({"name": name, "workers": members, "live_workers": len(alive),
                      "cpus": sum(r["cpus"] for r in alive), "gpus": sum(r["gpus"] for r in alive),
                      "cuda_problems": sum(1 for r in alive if r["cuda_problem"]),
                      "running": sum(len(r["running"]) for r in alive)})
    return found


def _running(user) -> dict[int, list[dict]]:
    """worker id -> the nodes running there now: those it runs, and the nodes of distributed jobs
    it is a member of."""
    found = defaultdict(list)
    for nr in NodeRun.objects.filter(status=st.RUNNING, worker__isnull=False).select_related("run").only(
            "id", "node_id", "kind", "worker_id", "run__id", "run__name", "run__owner_id", "run__pipeline_id"):
        found[nr.worker_id].append(_what(nr, user))
    for launch in NodeLaunch.objects.filter(status=st.RUNNING, index__gt=0, worker__isnull=False).select_related(
            "noderun__run").only("index", "worker_id", "noderun__node_id", "noderun__kind", "noderun__run__id",
                                 "noderun__run__name", "noderun__run__owner_id", "noderun__run__pipeline_id"):
        found[launch.worker_id].append({**_what(launch.noderun, user), "node_index": launch.index})
    return found


def _what(nr: NodeRun, user) -> dict:
    if user is None or nr.run.owner_id != user.pk:
        return {"mine": False}  # another user's run: neither its name nor its pipeline
    module = get_catalogue(user).get(nr.kind)
    return {"mine": True, "run_id": nr.run.id, "run_name": nr.run.name, "pipeline_id": nr.run.pipeline_id,
            "node_id": nr.node_id, "label": module.label if module else nr.kind}
