"""The Celery app, and each worker's heartbeat (what it offers; reaping nodes of lost workers;
sending what the outbox owes)."""
import os
import shutil
import socket
import subprocess
import threading

from celery import Celery, signals
from kombu.transport import TRANSPORT_ALIASES

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "designer.settings")

app = Celery("designer")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["designer.pipelines"])


# the embedded broker's URL (sqla+sqlite://) selects kombu's SQLAlchemy transport with our polling
TRANSPORT_ALIASES["sqla"] = "designer.embedded_broker:Transport"


def host_queue(hostname: str) -> str:
    """The queue only the worker `hostname` consumes: how a node of a distributed job is sent to
    the worker chosen for it (designer/pipelines/gang.py)."""
    return f"host.{hostname}"


@signals.celeryd_after_setup.connect
def _consume_own_queue(sender, instance, **kwargs):
    instance.app.amqp.queues.select_add(host_queue(sender))


_stop = threading.Event()


def _gpu_count() -> int:
    # without importing torch in the worker's main process (seconds and hundreds of MB)
    if not shutil.which("nvidia-smi"):
        return 0
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return sum(1 for line in out.splitlines() if line.startswith("GPU "))


def _heartbeat_loop(hostname: str, concurrency: int) -> None:
    from django.conf import settings
    from django.db import connection
    from django.utils import timezone

    from designer.pipelines import outbox
    from designer.pipelines.models import Worker
    from designer.pipelines.runs import reap_lost_nodes

    gpus = _gpu_count()
    while True:
        try:
            Worker.objects.update_or_create(
                hostname=hostname,
                defaults={"cpus": settings.WORKER_CPUS, "gpus": gpus, "concurrency": concurrency, "last_seen": timezone.now(),
                          "address": settings.WORKER_ADDRESS},
            )
            reap_lost_nodes()
            outbox.send()  # messages the broker refused or lost: any live worker sends them again
        except Exception as e:
            print(f"heartbeat of {hostname} failed: {e}", flush=True)
            connection.close()
        if _stop.wait(settings.HEARTBEAT_SECONDS):
            break
    Worker.objects.filter(hostname=hostname).delete()
    connection.close()


@signals.worker_ready.connect
def _start_heartbeat(sender, **kwargs):
    hostname = sender.hostname or socket.gethostname()
    concurrency = getattr(sender.controller, "concurrency", 1) if hasattr(sender, "controller") else 1
    threading.Thread(target=_heartbeat_loop, args=(hostname, concurrency or 1), daemon=True, name="designer-heartbeat").start()


@signals.worker_shutdown.connect
def _stop_heartbeat(**kwargs):
    _stop.set()
