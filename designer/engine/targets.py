"""Compute targets in a pipeline document: which target each node runs on, and what validation
says of a target that does not exist or cannot hold a node's Node count x Process count per node.

A compute target is a named group of workers (each worker joins one: WORKER_COMPUTE_TARGET, see
designer/pipelines/heartbeat.py). A pipeline names its default target (`compute_target`, top
level) and a node may name another (`run_settings.compute_target`, the original's "Use other
compute target"); neither: any worker, as before targets existed. Plain Python: the web app hands
in what the workers' heartbeats report (`Target`)."""
from __future__ import annotations

from dataclasses import dataclass

from designer.engine.problems import Problem

ANY = ""  # no target named: any live worker
NAME_RULE = "1 to 64 letters, digits, '_', '.' or '-', starting with a letter or a digit"
KEY = "compute_target"  # in the document (top level) and in a node's run_settings


@dataclass(frozen=True)
class Member:
    """A live worker of a target, as a check of Process count per node sees it."""
    name: str
    units: int  # its GPUs, or else its CPU cores
    unit_name: str  # "GPU(s)" or "CPU core(s)"


@dataclass(frozen=True)
class Target:
    """A compute target some worker joined; `live`: its workers alive now (maybe none)."""
    name: str
    live: tuple[Member, ...] = ()


def target_of(doc: dict, node: dict) -> str:
    """The target a node runs on: its own, else the pipeline's default, else ANY."""
    own = (node.get("run_settings") or {}).get(KEY) if isinstance(node.get("run_settings"), dict) else None
    return own or doc.get(KEY) or ANY


def known_text(targets: dict[str, Target]) -> str:
    """The targets that exist, in words (for a problem naming one that does not)."""
    if not targets:
        return "no worker has joined a compute target yet (a worker joins one with WORKER_COMPUTE_TARGET)"
    return "the compute targets are " + ", ".join(
        f"{t.name} ({len(t.live) or 'no'} live worker{'' if len(t.live) == 1 else 's'})" for t in sorted(targets.values(), key=lambda t: t.name))


def problems(doc: dict, catalogue, targets: dict[str, Target] | None) -> list[Problem]:
    """Targets named that no worker joined; Node count x Process count per node more than the
    target's live workers can hold. None: nothing is known of the workers (no check)."""
    if targets is None:
        return []
    found = []
    default = doc.get(KEY) or ANY
    if default and default not in targets:
        found.append(Problem(f"the pipeline's default compute target {default!r} does not exist: {known_text(targets)}",
                             "unknown_target"))
    for node in doc["nodes"]:
        own = (node.get("run_settings") or {}).get(KEY)
        if own and own not in targets:
            found.append(Problem(f"Compute target {own!r} does not exist: {known_text(targets)}", "unknown_target",
                                 node=node["id"], param=KEY))
            continue
        target = targets.get(target_of(doc, node))
        if target is not None:
            found += _units_problems(node, catalogue.for_node(node), target)
    return found


def _units_problems(node: dict, module, target: Target) -> list[Problem]:
    """A distributed node needs Node count live workers of its target with Process count per node
    units each. A target without a live worker: no problem (the node waits for one, and says so)."""
    if module is None or not module.distributed or not target.live:
        return []
    rs = {**(getattr(module.component, "run_settings", None) or {}), **(node.get("run_settings") or {})}
    n, p = rs.get("node_count", 1), rs.get("process_count_per_node", 1)
    if not (isinstance(n, int) and isinstance(p, int)) or n * p <= 1:
        return []
    fit = [m for m in target.live if m.units >= p]
    if len(fit) >= n:
        return []
    has = ", ".join(f"{m.name} ({m.units} {m.unit_name})" for m in sorted(target.live, key=lambda m: m.name))
    return [Problem(f"Node count x Process count per node is {n} x {p}, but compute target {target.name!r} has "
                    f"{len(fit)} live worker(s) with {p} units or more (its GPUs, else its CPU cores; one worker is "
                    f"one node): {has}", "too_few_units", node=node["id"], param="node_count" if len(fit) else "process_count_per_node")]
