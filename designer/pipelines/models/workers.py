"""The workers, and the leases of the jobs one process does at a time (the maintenance loop)."""
from __future__ import annotations

from django.db import models


class Worker(models.Model):
    """A Celery worker and what it offers; refreshed by its heartbeat (designer/pipelines/heartbeat.py).

    The row is kept when the worker stops (`stopped_at`), and revived when a worker of the same
    name starts again: the nodes it ran point at it, and their errors name it."""

    hostname = models.CharField(max_length=200, unique=True, help_text="the Celery worker's name (name@machine)")
    machine = models.CharField(max_length=200, blank=True, help_text="the host name of the machine it runs on")
    cpus = models.PositiveIntegerField(default=1)
    gpus = models.PositiveIntegerField(default=0)
    concurrency = models.PositiveIntegerField(default=1)
    started_at = models.DateTimeField(auto_now_add=True)
    last_seen = models.DateTimeField()
    stopped_at = models.DateTimeField(null=True, blank=True, help_text="when it shut down; NULL while it runs, or if it was lost")
    address = models.CharField(max_length=200, blank=True,
                               help_text="where the other workers of a distributed job reach this one")
    weights = models.JSONField(default=dict, blank=True,
                               help_text="its torch hub folder and the pretrained weights files in it: {folder, files}")
    compute_target = models.CharField(max_length=64, blank=True, default="", db_index=True,
                                      help_text="the compute target it joined (WORKER_COMPUTE_TARGET); nodes of that target run here")
    gpu_inventory = models.JSONField(default=list, blank=True,
                                     help_text="the GPUs nvidia-smi lists on its machine: [{index, name, memory_mb}]")
    cuda_problem = models.TextField(blank=True, default="",
                                    help_text="why CUDA could not start although nvidia-smi lists GPUs: it then offers 0 GPUs")
    cache = models.JSONField(default=dict, blank=True,
                             help_text="with a bucket store, its cache of outputs: {entries, bytes, max_bytes, hits, misses, bytes_fetched}")
    # one worker = one node of a distributed job: set by a conditional UPDATE (designer/pipelines/compute/workers.py)
    reserved_by = models.ForeignKey("NodeRun", null=True, blank=True, on_delete=models.SET_NULL,
                                    related_name="reserved_workers")

    def __str__(self):
        return self.hostname

    @property
    def units(self) -> int:
        """Processes a node of a distributed job may start here: its GPUs, or else its CPU cores."""
        return self.gpus or self.cpus

    @property
    def unit_name(self) -> str:
        return "GPU(s)" if self.gpus else "CPU core(s)"

    @property
    def label(self) -> str:
        """How errors and the API name it: `<machine>:<worker name>`."""
        return f"{self.machine}:{self.hostname}" if self.machine else self.hostname


class Lease(models.Model):
    """Who holds a job that exactly one process may do at a time: the maintenance loop
    (designer/pipelines/maintenance.py). Taken and renewed by a conditional UPDATE; a holder that
    dies leaves it to expire, and the next process to ask takes it."""

    name = models.CharField(max_length=64, primary_key=True)
    holder = models.CharField(max_length=200, help_text="the process holding it: a worker's name, or maintenance@machine:pid")
    expires_at = models.DateTimeField(help_text="unless renewed by then, another process may take it")

    def __str__(self):
        return f"{self.name} held by {self.holder}"
