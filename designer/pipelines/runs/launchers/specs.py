"""What each node of a distributed job runs: its torchrun command (c10d rendezvous hosted at
node 0) and environment (the launcher's, with the job's own: DistributedJob.env), stored in its NodeLaunch row for the worker that starts it."""
from __future__ import annotations

import os
from pathlib import Path

from django.conf import settings

from designer.engine.executor import DistributedLaunchError
from designer.pipelines.models import Worker
from designer.pipelines.runs.launchers.gang import Gang
from supervision import gpus, launch


def uses_gpus(job, nodes: list[Worker]) -> bool:
    """NCCL on GPUs when the module offers a GPU variant and every node has a GPU; else Gloo."""
    return job.gpu_argv is not None and all(w.gpus for w in nodes)


def gpu_environment(gpu: bool, processes: int) -> dict[str, str]:
    """CUDA_VISIBLE_DEVICES of every process of a node, as the original sets it for a PyTorch job: the
    node's GPUs the job uses (0 .. P-1; local rank r uses GPU r, `cuda:<LOCAL_RANK>`), or none at all
    when the job runs on CPUs (Gloo), so that a script that looks for a GPU does not take one
    another job may be using."""
    return {"CUDA_VISIBLE_DEVICES": ",".join(str(i) for i in range(processes)) if gpu else ""}


def node_spec(gang: Gang, job, nodes: list[Worker], index: int, endpoint: str) -> dict:
    """The spec of node `index`: {command, env, mpi_log, prefix} (launch.NodeProcess's arguments)."""
    node = nodes[index]
    gpu = uses_gpus(job, nodes)
    argv = [*job.argv, *((job.gpu_argv if gpu else getattr(job, "cpu_argv", None)) or [])]
    sizes = {"NODE_COUNT": str(gang.n), "PROCESS_COUNT_PER_NODE": str(gang.p)}
    if getattr(job, "per_node", False):  # one process here, whose command starts the node's; node 0 hosts the group
        master_addr, _, master_port = endpoint.rpartition(":")
        command = launch.node_command(job.module, argv)
        sizes |= {"NODE_RANK": str(index), "WORLD_SIZE": str(gang.n * gang.p), "MASTER_ADDR": master_addr,
                  "MASTER_PORT": master_port, "DESIGNER_LAUNCH": "per_node"}
    else:
        command = launch.torchrun_command(
            job.module, argv, gang.n, gang.p, endpoint, gang.rendezvous_id,
            is_host=index == 0, local_addr=node.address or node.hostname,
            join_timeout=int(settings.DISTRIBUTED_START_SECONDS) + 30, max_restarts=getattr(job, "max_restarts", 0))
    # the job's own variables (a component's DESIGNER_METRICS_FILE...), under the launcher's; its
    # PYTHONPATH first (a component's sdk/compat: `from azureml.core import Run` on every rank too)
    own = getattr(job, "env", None) or {}
    ranks = launch.rank_environment(gang.logs, gang.state_dir, node.hostname, index,
                                   launch.slot_threads(node.cpus, node.concurrency, gang.p))
    env = {**own, **ranks, **sizes, **gpu_environment(gpu, gang.p)}
    if own.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.pathsep.join([own["PYTHONPATH"], ranks["PYTHONPATH"]])
    return {"command": command, "env": env, "mpi_log": str(gang.mpi_log), "prefix": f"node {index} ({node.hostname})",
            "node": index}


def process_of(spec: dict) -> launch.NodeProcess:
    """Start the torchrun of a spec. A job on GPUs first holds as many of this machine's GPUs as it
    has processes here (supervision/gpus.py: other jobs hold theirs), and its processes see those."""
    env, held = dict(spec["env"]), None
    wanted = len([d for d in env.get("CUDA_VISIBLE_DEVICES", "").split(",") if d])
    if wanted:
        try:
            held = gpus.lease(wanted, say=lambda text: launch.append_log(Path(spec["mpi_log"]), f"{spec['prefix']}: {text}"),
                              wait=settings.DISTRIBUTED_START_SECONDS)
        except gpus.NoFreeGPU as e:
            raise DistributedLaunchError(f"{spec['prefix']}: {e}") from None
        env["CUDA_VISIBLE_DEVICES"] = held.visible_devices
    return launch.NodeProcess(spec["command"], env, spec["mpi_log"], spec["prefix"], gpus=held)
