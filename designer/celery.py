"""The Celery app: its configuration, the names of its tasks, and each worker's own queue.

The tasks and the workers' heartbeat live in designer/pipelines (tasks.py loads heartbeat.py,
which connects to the worker's signals); this module imports nothing of the app, so that every
part of it can send a task by name (`app.send_task(RUN_NODE, ...)`)."""
import os

from celery import Celery, bootsteps, signals
from celery.worker import state as worker_state
from kombu.transport import TRANSPORT_ALIASES

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "designer.settings")

app = Celery("designer")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["designer.pipelines"])


class FreeSlotsOnly(bootsteps.StartStopStep):
    """Redis: a worker whose slots are all taken consumes no message. A worker acks a message when its
    task starts, so even with a prefetch of one a slot a worker running two nodes would hold two
    more back while another worker sat idle, until the outbox sent them again (RESEND_AFTER_SECONDS).
    The check of Celery 5.6's `worker_disable_prefetch`, made on Celery 5.5 (this project's pin):
    on upgrading, that setting replaces this step. Other brokers are left as they are."""
    requires = ("celery.worker.consumer.tasks:Tasks",)

    def start(self, c):
        if c.connection.transport.driver_type != "redis":
            return
        qos = c.task_consumer.channel.qos  # kombu's Redis poller asks it before each fetch
        may_consume = qos.can_consume

        def can_consume():
            slots = getattr(c.controller, "max_concurrency", None) or c.pool.num_processes
            return len(worker_state.reserved_requests) < slots and may_consume()

        qos.can_consume = can_consume


app.steps["consumer"].add(FreeSlotsOnly)

RUN_NODE = "designer.run_node"  # run one node of a run: args [NodeRun id]
LAUNCH_NODE = "designer.launch_node"  # one node (not node 0) of a distributed job: args [NodeLaunch id]
PREPARE_VERSION = "designer.prepare_version"  # package a registered model version: args [ModelVersion id]

# the embedded broker's URL (sqla+sqlite://) selects kombu's SQLAlchemy transport with our polling
TRANSPORT_ALIASES["sqla"] = "designer.embedded_broker:Transport"


def host_queue(hostname: str) -> str:
    """The queue only the worker `hostname` consumes: how a node of a distributed job is sent to
    the worker chosen for it (designer/pipelines/runs/launchers/distributed.py)."""
    return f"host.{hostname}"


def target_queue(target: str) -> str:
    """The queue the workers of a compute target consume (designer/pipelines/heartbeat.py): how a
    node of a pipeline that names the target reaches one of them (designer/pipelines/runs/routing.py)."""
    return f"target.{target}"


@signals.celeryd_after_setup.connect
def _consume_own_queue(sender, instance, **kwargs):
    instance.app.amqp.queues.select_add(host_queue(sender))
