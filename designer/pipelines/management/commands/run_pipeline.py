"""Run a pipeline file headless, through the same engine and workers as the web app."""
import copy
import json
import math
import sys
import time
from datetime import datetime

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.urls import reverse

from designer.engine import graph, statuses
from designer.pipelines.catalogue.service import get_catalogue
from designer.pipelines.management.commands._common import (
    DEFAULT_OWNER,
    datasets_by_name,
    owner,
    param_values,
    problems_text,
    read_pipeline_file,
    ready_database,
    saved_pipeline,
)
from designer.pipelines.models import Run, Source
from designer.pipelines.runs import labels
from designer.pipelines.runs import service as runs
from designer.pipelines.sweeps import compare


def command_labels(opts) -> labels.Labels:
    """--name, --experiment and --tag, checked as the API checks them."""
    try:
        return labels.Labels(name=None if opts["name"] is None else labels.text(opts["name"], "--name", labels.MAX_NAME),
                             experiment=None if opts["experiment"] is None else
                             labels.text(opts["experiment"], "--experiment", labels.MAX_EXPERIMENT),
                             tags=labels.parse_tag_options(opts["tag"]))
    except labels.LabelError as e:
        raise CommandError(str(e))


class Command(BaseCommand):
    help = "Validate and run a pipeline JSON file; print each node's status as it changes."

    def add_arguments(self, parser):
        parser.add_argument("file")
        parser.add_argument("--set", action="append", default=[], metavar="NODE.PARAM=VALUE",
                            help="override a parameter; VALUE is read as JSON, else as text")
        parser.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                            help="the value of a pipeline parameter (default: its declared default)")
        parser.add_argument("--regenerate", nargs="*", metavar="NODE",
                            help="do not reuse earlier outputs (of the named nodes, or of every node)")
        parser.add_argument("--owner", default=DEFAULT_OWNER, help="an existing user the run belongs to (default: admin)")
        parser.add_argument("--name", help="the run's name (default: the pipeline's)")
        parser.add_argument("--experiment", help="the experiment the run is listed under on the Jobs page (default: the pipeline's name)")
        parser.add_argument("--tag", action="append", default=[], metavar="KEY=VALUE", help="a tag of the run (repeatable)")
        parser.add_argument("--inline", action="store_true", help="run the nodes in this process instead of on the workers")
        parser.add_argument("--timeout", type=float, default=0, help="give up after this many seconds (default: never)")
        parser.add_argument("--compute-target", metavar="NAME",
                            help="the pipeline's default compute target for this run (\"\": any worker); the file's otherwise")
        parser.add_argument("--node-target", action="append", default=[], metavar="NODE=NAME",
                            help="the compute target of one node for this run (repeatable); the file's otherwise")

    def handle(self, *args, **opts):
        doc = read_pipeline_file(opts["file"])
        file = copy.deepcopy(doc)  # as read: what a new saved pipeline holds (--set and targets are this run's)
        ready_database(self.stderr)
        user = owner(opts["owner"], self.stderr)
        for item in opts["set"]:
            apply_override(doc, item)
        datasets_by_name(user, doc, opts["file"])
        set_targets(doc, opts["compute_target"], opts["node_target"])
        values = param_values(doc, opts["param"])
        regenerate = True if opts["regenerate"] == [] else set(opts["regenerate"] or ())
        given = command_labels(opts)
        pipeline, created = saved_pipeline(user, file, opts["file"], self.stdout)
        try:
            run = runs.submit(user, doc, pipeline=pipeline, name=pipeline.name if pipeline else doc.get("name"),
                              regenerate=regenerate, inline=opts["inline"], values=values, labels=given,
                              source=Source.HEADLESS)
        except graph.PipelineInvalid as e:
            if created:  # nothing of a file that cannot run is kept
                pipeline.delete()
            raise CommandError(f"{opts['file']} cannot run, {len(e.problems)} problem(s):\n{problems_text(e.problems)}")
        self.stdout.write(f"run {run.id}: {len(doc['nodes'])} node(s) submitted"
                          + (f" with {', '.join(f'{k}={v}' for k, v in run.parameter_values.items())}" if run.parameter_values else "")
                          + (f"; follow it at {address(run)}" if run.pipeline_id else ""))
        run = self.follow(run, opts["timeout"])
        failed = list(run.nodes.filter(status=statuses.FAILED))
        self.stdout.write(f"run {run.id} {run.status}")
        for line in final_metrics(run, user):
            self.stdout.write(f"  {line}")
        if run.pipeline_id:
            self.stdout.write(f"open it at {address(run)}")
        if failed:
            for nr in failed:
                self.stderr.write(f"node {nr.node_id} ({nr.kind}) failed:\n{nr.error}")
            raise CommandError(f"run {run.id} failed at node {', '.join(nr.node_id for nr in failed)}", returncode=1)
        if run.status != statuses.COMPLETED:
            raise CommandError(f"run {run.id} ended {run.status}", returncode=1)

    def follow(self, run: Run, timeout: float) -> Run:
        seen: dict[str, str] = {}
        said_waiting = ""
        deadline = time.monotonic() + timeout if timeout else None
        while True:
            run.refresh_from_db()
            for nr in run.nodes.all():
                for status, at in steps_since(nr, seen.get(nr.node_id)):
                    self.stdout.write(f"{at:%H:%M:%S} {nr.node_id} ({nr.kind}): {status}")
                seen[nr.node_id] = nr.status
            if run.finished:
                return run
            message = runs.waiting_message(run)
            if message and message != said_waiting:
                self.stdout.write(message)
            said_waiting = message
            runs.reap_lost_nodes()
            if deadline and time.monotonic() > deadline:
                runs.cancel(run)
                raise CommandError(f"run {run.id} did not finish within {timeout:g} s: cancelled", returncode=1)
            sys.stdout.flush()
            time.sleep(0.1)


def address(run: Run) -> str:
    """Where the run opens in the web app: its pipeline's canvas, showing it."""
    return f"{settings.SITE_URL}{reverse('designer', args=[run.pipeline_id])}?run={run.id}"


def final_metrics(run: Run, user) -> list[str]:
    """"Evaluate Model: accuracy 0.7312", one per metric the run's nodes reported (a reused node's
    from the run that computed it): the last value, or the kept epoch's where a node kept one.
    A metric named as a parameter of its module (the learning rate a schedule took down to 0) is
    left out: its last value, printed as a result beside the parameter's, misled (issue 42)."""
    lines = []
    catalogue = get_catalogue(user)
    for row in compare.metrics([run], catalogue):
        module = catalogue.get(row["kind"])
        if module and row["name"] in {p.name for p in module.params}:
            continue
        kept, final = row["kept"][0], row["final"][0]
        if kept is not None and kept != final:
            lines.append(f"{row['label']} {kept:.4g} ({row['step']} {row['kept_step'][0]}, whose model was kept; last {final:.4g})")
        elif final is not None:
            lines.append(f"{row['label']} {final:.4g}")
    return lines


def steps_since(nr, printed: str | None) -> list[tuple[str, datetime]]:
    """The statuses `nr` went through since the one last printed, each with its time.

    A node on a fast worker can be queued, run and finish between two looks at the database:
    its timestamps tell which steps it took, so that none is left out of the output."""
    if printed == nr.status:
        return []
    now = datetime.now().astimezone()
    steps = [(statuses.PENDING, now)]
    if nr.status != statuses.REUSED:  # a reused node did no work: it goes from pending to reused
        steps += [(status, at.astimezone()) for status, at in ((statuses.QUEUED, nr.queued_at), (statuses.RUNNING, nr.started_at)) if at]
    if nr.status not in (status for status, _ in steps):
        steps.append((nr.status, nr.finished_at.astimezone() if nr.finished_at else now))
    names = [status for status, _ in steps]
    if printed in names:
        return steps[names.index(printed) + 1:]
    # first look: from where it is now back to its first step after pending
    return steps[1:] if nr.status != statuses.PENDING else steps


def apply_override(doc: dict, item: str) -> None:
    target, sep, raw = item.partition("=")
    node_id, dot, param = target.partition(".")
    if not sep or not dot:
        raise CommandError(f"--set {item!r}: expected NODE.PARAM=VALUE")
    node = next((n for n in doc["nodes"] if n.get("id") == node_id), None)
    if node is None:
        raise CommandError(f"--set {item!r}: no node {node_id!r} (nodes: {', '.join(n.get('id', '?') for n in doc['nodes'])})")
    node.setdefault("parameters", {})[param] = override_value(raw)


def override_value(raw: str):
    """JSON (3, 0.5, 1e400, NaN, true, "text"), else the text itself; but nan, inf and -inf in
    any case are the numbers (the validation then names the parameter that cannot take them)."""
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        pass
    try:
        number = float(raw)
    except ValueError:
        return raw
    return raw if math.isfinite(number) else number


def set_targets(doc: dict, default: str | None, per_node: list[str]) -> None:
    """--compute-target and --node-target: the run's targets instead of the file's (validation
    then says whether they exist)."""
    if default is not None:
        doc["compute_target"] = default
    nodes = {n.get("id"): n for n in doc["nodes"]}
    for item in per_node:
        nid, sep, name = item.partition("=")
        if not sep or nid not in nodes:
            raise CommandError(f"--node-target {item!r}: expected NODE=NAME, NODE one of the file's node ids "
                               f"({', '.join(map(str, list(nodes)[:20]))})")
        nodes[nid]["run_settings"] = {**(nodes[nid].get("run_settings") or {}), "compute_target": name}
