"""Run an Azure ML v2 job file as `az ml job create --file job.yml` would: a command job as a run, a
sweep job as a sweep, through the same engine and workers as the web app (sdk/azure_job.py).

The job's code and command become a component of the owner's (uploaded as the Components page
uploads one, so the owner needs the permission *Can add component*), named `job_<display name>`:
a job file run again unchanged runs the same version (its outputs may be reused), an edited one a
new version. Then it runs and is followed as `run_pipeline` and `sweep` follow theirs."""
import json
import shutil
import tempfile
from pathlib import Path

import yaml
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management.base import BaseCommand, CommandError

from designer.engine import graph, statuses
from designer.pipelines.catalogue import components
from designer.pipelines.management.commands import run_pipeline, sweep
from designer.pipelines.management.commands._common import DEFAULT_OWNER, owner, problems_text, ready_database
from designer.pipelines.models import Component, Source
from designer.pipelines.runs import labels as run_labels
from designer.pipelines.runs import service as runs
from designer.pipelines.sweeps import service as sweeps
from sdk import azure_job, yamltext
from sdk import component as component_file

KIND_PREFIX = "job_"


class Command(BaseCommand):
    help = ("Run an Azure ML v2 command or sweep job file (az ml job create --file): its code and command as a "
            "component of the owner's, then a run or a sweep; exits non-zero when it failed.")

    def add_arguments(self, parser):
        parser.add_argument("--file", "-f", required=True, help="the job's YAML file ($schema: commandJob or sweepJob)")
        parser.add_argument("--owner", default=DEFAULT_OWNER, help="an existing user who may add components (default: admin)")
        parser.add_argument("--inline", action="store_true", help="a command job: run it in this process, not on the workers")
        parser.add_argument("--timeout", type=float, default=0, help="cancel it after this many seconds (default: never)")

    def handle(self, *args, **opts):
        path = Path(opts["file"])
        job = read_job(path)
        ready_database(self.stderr)
        user = owner(opts["owner"], self.stderr)
        if not user.has_perm(components.PERMISSION):
            raise CommandError(f"--owner {user.username}: a job's command runs on the workers as a component: its owner "
                               f"needs the permission '{components.PERMISSION_NAME}' (granted in the admin)")
        version = keep_component(user, job)
        job.pipeline["nodes"][0]["version"] = version
        given = run_labels.Labels(name=job.name, experiment=job.experiment, tags={k: str(v) for k, v in job.tags.items()})
        if job.sweep is not None:
            self.start_sweep(user, job, path, given, opts["timeout"])
        else:
            self.start_run(user, job, path, given, opts)

    def start_run(self, user, job, path: Path, given, opts) -> None:
        try:
            run = runs.submit(user, job.pipeline, name=job.name or path.stem, inline=opts["inline"], labels=given,
                              source=Source.HEADLESS)
        except graph.PipelineInvalid as e:
            raise CommandError(f"{path} cannot run, {len(e.problems)} problem(s):\n{problems_text(e.problems)}")
        self.stdout.write(f"run {run.id}: the command job {job.pipeline['nodes'][0]['kind']} "
                          f"v{job.pipeline['nodes'][0]['version']} submitted")
        follower = run_pipeline.Command(stdout=self.stdout, stderr=self.stderr)
        run = follower.follow(run, opts["timeout"])
        self.stdout.write(f"run {run.id} {run.status}")
        for line in run_pipeline.final_metrics(run, user):
            self.stdout.write(f"  {line}")
        failed = list(run.nodes.filter(status=statuses.FAILED))
        if run.status != statuses.COMPLETED:
            for nr in failed:
                self.stderr.write(f"{nr.kind} failed:\n{nr.error}")
            raise CommandError(f"run {run.id} ended {run.status}", returncode=1)

    def start_sweep(self, user, job, path: Path, given, timeout: float) -> None:
        try:
            started = sweeps.start(user, job.pipeline, json.dumps(job.sweep), labels=given, source=Source.HEADLESS)
        except sweeps.SweepInvalid as e:
            raise CommandError(f"{path} cannot be swept: {e}:\n{problems_text(e.problems)}")
        config = started.config
        self.stdout.write(f"sweep {started.pk}: {config['sampling']} sampling of "
                          f"{', '.join(e['name'] for e in config['parameter_space'])}, up to {config['max_total_runs']} "
                          f"trial(s), {config['max_concurrent_runs']} at a time, {config['primary_metric_goal']} "
                          f"{config['primary_metric_name']}")
        ended = sweep.Command(stdout=self.stdout, stderr=self.stderr).follow(started, timeout)
        self.stdout.write(f"sweep {ended.pk} {ended.status}: {ended.message}")
        if not ended.trials.filter(status__in=(statuses.COMPLETED, statuses.EARLY_TERMINATED)).exists():
            raise CommandError(f"sweep {ended.pk}: no trial succeeded", returncode=1)


def read_job(path: Path) -> azure_job.Job:
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as e:
        raise CommandError(f"cannot read {path}: {e.strerror or e}")
    except UnicodeDecodeError:
        raise CommandError(f"{path}: not UTF-8 text")
    try:
        data = yamltext.load(text)
    except (yamltext.YamlTextError, ValueError, RecursionError) as e:
        raise CommandError(f"{path}: not a job file's YAML: {e}")
    except yaml.YAMLError as e:
        raise CommandError(f"{path}: not YAML: {getattr(e, 'problem', None) or e}")
    if not azure_job.is_job(data):
        raise CommandError(f"{path}: not an Azure ML job file: its first line is $schema: "
                           f"https://azuremlschemas.azureedge.net/latest/commandJob.schema.json (or sweepJob)")
    try:
        return azure_job.translate(data, path, kind_of(data, path))
    except azure_job.JobError as e:
        raise CommandError(str(e))


def kind_of(data: dict, path: Path) -> str:
    """job_<display name> in the letters a kind may hold (the file's name where it has none)."""
    name = data.get("display_name") if isinstance(data.get("display_name"), str) else path.stem
    slug = "".join(c if c.isascii() and c.isalnum() else "_" for c in name.lower()).strip("_")
    return (KIND_PREFIX + "_".join(filter(None, slug.split("_"))))[:64] or "job"


def keep_component(user, job: azure_job.Job) -> int:
    """The version of the job's component that runs it: the owner's latest when the file and code
    are the same, else a new one (uploaded as the Components page uploads)."""
    kind = job.component["name"]
    latest = Component.objects.filter(owner=user, kind=kind).order_by("-version").first()
    with tempfile.TemporaryDirectory(prefix="job-") as tmp:
        folder = Path(tmp, kind)
        if job.code is not None:
            shutil.copytree(job.code, folder, ignore=shutil.ignore_patterns(*component_file.IGNORED))
        folder.mkdir(parents=True, exist_ok=True)
        for version in ([latest.version] if latest else []) + [(latest.version + 1) if latest else 1]:
            (folder / component_file.FILE_NAME).write_text(
                yamltext_dump({**job.component, "code": ".", "version": version}), encoding="utf-8")
            try:
                digest = component_file.load(folder / component_file.FILE_NAME).digest()
            except component_file.ComponentError as e:
                raise CommandError(str(e).replace(str(folder), kind))
            if latest is not None and version == latest.version:
                if digest == latest.digest:
                    return version  # unchanged: the same component
                continue
            files = sorted(p for p in folder.rglob("*") if p.is_file())
            uploaded = [SimpleUploadedFile(p.name, p.read_bytes()) for p in files]
            names = [p.relative_to(tmp).as_posix() for p in files]
            try:
                return components.store(user, uploaded, names).version
            except components.Refused as e:
                raise CommandError(f"the job's component could not be kept: {e}")
    raise AssertionError("unreachable")


def yamltext_dump(data: dict) -> str:
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
