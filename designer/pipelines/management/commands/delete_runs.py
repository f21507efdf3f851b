"""Delete runs that are over, for an administrator keeping a team's disk in bounds: named runs, or
those finished more than N days ago, of one user or of everyone. Each is deleted as the page
deletes it (retention.py): hidden at once, its folders removed by the workers once no other run
reuses them. Refusals (a run still running, a trial of a running sweep) are printed, not fatal."""
from datetime import timedelta

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from designer.engine import statuses as st
from designer.pipelines.management.commands._common import owner, ready_database
from designer.pipelines.models import Run
from designer.pipelines.runs import retention


class Command(BaseCommand):
    help = ("Delete runs that are over: delete_runs RUN_ID ... or --older-than DAYS, optionally of one --owner; "
            "--dry-run lists them only.")

    def add_arguments(self, parser):
        parser.add_argument("runs", nargs="*", type=int, metavar="RUN_ID", help="runs to delete")
        parser.add_argument("--older-than", type=float, metavar="DAYS",
                            help="every run that finished more than DAYS days ago (0: every run that is over)")
        parser.add_argument("--owner", help="only this user's runs (default: every user's)")
        parser.add_argument("--status", action="append", choices=sorted(st.RUN_FINISHED), default=[],
                            help="only runs that ended so (repeat for more; default: any)")
        parser.add_argument("--dry-run", action="store_true", help="list what would be deleted; delete nothing")

    def handle(self, *args, **opts):
        if not opts["runs"] and opts["older_than"] is None:
            raise CommandError("name the runs to delete (delete_runs 12 15), or give --older-than DAYS "
                               "(--older-than 0 for every run that is over)")
        if opts["older_than"] is not None and opts["older_than"] < 0:
            raise CommandError(f"--older-than {opts['older_than']:g}: a number of days, 0 or more")
        ready_database(self.stderr)
        picked = Run.objects.select_related("owner").order_by("id")
        if opts["owner"]:
            picked = picked.filter(owner=owner(opts["owner"], self.stderr))
        if opts["runs"]:
            picked = picked.filter(pk__in=opts["runs"])
            missing = sorted(set(opts["runs"]) - set(picked.values_list("id", flat=True)))
            if missing:
                whose = f" of {opts['owner']}" if opts["owner"] else ""
                self.stderr.write(f"no run{whose} numbered {', '.join(map(str, missing))} (deleted already?)")
        if opts["older_than"] is not None:
            picked = picked.filter(finished_at__lt=timezone.now() - timedelta(days=opts["older_than"]))
        if opts["status"]:
            picked = picked.filter(status__in=opts["status"])
        deleted = 0
        for run in picked:
            line = f"run #{run.pk} {run.name!r} of {run.owner.get_username()}, {run.status}"
            if opts["dry_run"]:
                self.stdout.write(f"would delete {line}")
                continue
            try:
                retention.delete(run)
            except retention.CannotDelete as e:
                self.stderr.write(f"not deleted: {e}")
                continue
            deleted += 1
            self.stdout.write(f"deleted {line}")
        if not opts["dry_run"]:
            self.stderr.write(f"{deleted} run(s) deleted; the workers remove their folders once no other run "
                              f"reuses them (within a minute)")
