"""Run the maintenance loop: the periodic work, one process at a time (designer/pipelines/maintenance.py) as a process of its
own, as healthchecks runs `sendalerts`: for a deployment that wants the outbox sent, lost nodes
failed and sweep deadlines kept while no worker is up. Every worker runs the same loop in a
thread; one process at a time holds the lease and does the work, so starting this beside them,
or two of it, is safe. Ends on SIGTERM or Ctrl-C, giving the lease up."""
import signal
import threading

from django.core.management.base import BaseCommand

from designer.pipelines import maintenance


class Command(BaseCommand):
    help = "Run the maintenance loop (reaper, outbox, sweep deadlines, retention) until stopped."

    def add_arguments(self, parser):
        parser.add_argument("--name", default="", help="how the lease names this process (default: maintenance@machine:pid)")

    def handle(self, *args, **opts):
        stop = threading.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
        holder = opts["name"] or maintenance.default_holder()
        self.stdout.write(f"maintenance {holder}: running the periodic work while it holds the lease")
        self.stdout.flush()
        maintenance.run_forever(holder, stop)
