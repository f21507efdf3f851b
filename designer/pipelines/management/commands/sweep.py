"""Sweep a pipeline file headless: validate, start the trials on the workers, print each trial as
it ends and the best one at the end."""
import time

from django.core.management.base import BaseCommand, CommandError

from designer.engine import statuses
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
from designer.pipelines.models import Source, Sweep
from designer.pipelines.sweeps import service as sweeps


class Command(BaseCommand):
    help = ("Sweep a pipeline JSON file's parameters with a HyperDrive-style configuration (YAML or JSON); "
            "exits non-zero when every trial failed.")

    def add_arguments(self, parser):
        parser.add_argument("file", help="the pipeline file (its parameters are what the sweep samples)")
        parser.add_argument("--config", required=True, help="the sweep configuration: sampling, parameter_space, "
                            "policy, primary_metric_name, primary_metric_goal, max_total_runs, max_concurrent_runs ...")
        parser.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                            help="the value of a pipeline parameter that is not swept (default: its declared default)")
        parser.add_argument("--owner", default=DEFAULT_OWNER, help="an existing user the sweep belongs to (default: admin)")
        parser.add_argument("--timeout", type=float, default=0, help="cancel the sweep after this many seconds (default: never)")

    def handle(self, *args, **opts):
        doc = read_pipeline_file(opts["file"])
        try:
            with open(opts["config"], "rb") as f:
                raw = f.read()
        except OSError as e:
            raise CommandError(f"cannot read {opts['config']}: {e.strerror}")
        ready_database(self.stderr)
        user = owner(opts["owner"], self.stderr)
        datasets_by_name(user, doc, opts["file"])
        values = param_values(doc, opts["param"])
        pipeline, created = saved_pipeline(user, doc, opts["file"], self.stdout)
        try:
            sweep = sweeps.start(user, doc, raw, pipeline=pipeline, values=values, source=Source.HEADLESS)
        except sweeps.SweepInvalid as e:
            if created:  # nothing of a file that cannot be swept is kept
                pipeline.delete()
            raise CommandError(f"{opts['file']} with {opts['config']} cannot be swept: {e}:\n{problems_text(e.problems)}")
        config = sweep.config
        swept = ", ".join(e["name"] for e in config["parameter_space"])
        self.stdout.write(f"sweep {sweep.pk}: {config['sampling']} sampling of {swept}, up to {config['max_total_runs']} trial(s), "
                          f"{config['max_concurrent_runs']} at a time, {config['primary_metric_goal']} "
                          f"{config['primary_metric_name']}")
        sweep = self.follow(sweep, opts["timeout"])
        self.stdout.write(f"sweep {sweep.pk} {sweep.status}: {sweep.message}")
        if not sweep.trials.filter(status__in=(statuses.COMPLETED, statuses.EARLY_TERMINATED)).exists():
            raise CommandError(f"sweep {sweep.pk}: no trial succeeded", returncode=1)

    def follow(self, sweep: Sweep, timeout: float) -> Sweep:
        printed: set[int] = set()
        deadline = time.monotonic() + timeout if timeout else None
        metric = sweep.config["primary_metric_name"]
        while True:
            sweep.refresh_from_db()
            for trial in sweep.trials.filter(status__in=statuses.TRIAL_FINISHED).exclude(number__in=printed):
                values = ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in trial.values.items())
                figure = f"{metric} {trial.value:.4g}" if trial.value is not None else "no metric"
                if trial.status == statuses.FAILED:
                    figure = trial.error or "failed"
                self.stdout.write(f"trial {trial.number} {trial.status.replace('_', ' ')} (run {trial.run_id}, "
                                  f"{trial.epochs} epoch(s)): {values}: {figure}" + (f"; {trial.detail}" if trial.detail else ""))
                printed.add(trial.number)
            if sweep.finished:
                return sweep
            sweeps.tick_one(sweep)
            if deadline and time.monotonic() > deadline:
                sweeps.cancel(sweep)
                raise CommandError(f"sweep {sweep.pk} did not finish within {timeout:g} s: cancelled", returncode=1)
            self.stdout.flush()
            time.sleep(0.2)
