"""Compute targets with real Celery workers of two targets (and a third that joins late): a
pipeline's default target and a node's own route each node to its target's workers only; a
target that does not exist is refused at validation, naming those that do; a node whose target
has no live worker waits, says so, and starts when a worker joins. The GPU inventory comes from
`nvidia-smi` (a fake one first on the worker's PATH: no GPU exists here, the only stand-in); the
CUDA probe is real, and fails on this machine without a driver: the worker offers 0 GPUs, says
why, and joins the cpu target."""
import json
import os
import re
import stat
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from designer.celery import RUN_NODE, app, host_queue
from designer.pipelines.models import NodeRun, Run, Worker
from designer.pipelines.runs import service as runs
from tests.compute.test_preflight_workers import wait_for
from tests.conftest import wait_for_run
from tests.pipes import link, node, pipeline

pytestmark = [pytest.mark.production, pytest.mark.django_db(transaction=True)]

H100 = "NVIDIA H100 80GB HBM3"


def fake_nvidia_smi(folder, *gpus: str) -> str:
    """A PATH whose first folder has an `nvidia-smi` that lists `gpus` as the query asks for them."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "nvidia-smi"
    lines = "".join(f"{i}, {name}, 81559\\n" for i, name in enumerate(gpus))
    script.write_text(f"#!/bin/sh\nprintf '{lines}'\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return f"{folder}:{os.environ['PATH']}"


def cpu_then_training(default="cpu", train_target="gpu", epochs=1):
    """src -> add on the pipeline's default target; two trainings on their own target."""
    doc = pipeline([node("src", "toy_source", value=1), node("conv", "toy_add"),
                    dict(node("fit", "toy_training", epochs=epochs, epoch_seconds=0), run_settings={"compute_target": train_target}),
                    dict(node("fit2", "toy_training", epochs=epochs, epoch_seconds=0), run_settings={"compute_target": train_target})],
                   [link("src", "conv")], name="targets")
    return doc | {"compute_target": default}


def problems(client, doc):
    r = client.post("/api/validate", json.dumps(doc), content_type="application/json")
    assert r.status_code == 200, r.content
    return [p["text"] for p in r.json()["problems"]]


def test_each_node_runs_on_its_targets_workers_and_a_target_without_live_worker_waits_until_one_joins(
        start_worker, users, owner_client, tmp_path):
    cpu = start_worker("tgt-cpu", concurrency=2, extra_env={"PATH": fake_nvidia_smi(tmp_path / "bin", H100, H100)})
    gpu = start_worker("tgt-gpu", concurrency=2, extra_env={"WORKER_COMPUTE_TARGET": "gpu"})

    # the heartbeat says what each has: nvidia-smi lists two GPUs, CUDA cannot start on them
    row = Worker.objects.get(hostname=cpu.hostname)
    assert row.compute_target == "cpu" and row.gpus == 0  # not named: cpu, as its GPUs do not work
    assert row.gpu_inventory == [{"index": 0, "name": H100, "memory_mb": 81559}, {"index": 1, "name": H100, "memory_mb": 81559}]
    # the probe's own words: a CUDA torch finds no driver, a CPU-only torch was not built with CUDA
    assert re.fullmatch(r"CUDA cannot start: (RuntimeError: Found no NVIDIA driver on your system.*|AssertionError: Torch "
                        r"not compiled with CUDA enabled)", row.cuda_problem), row.cuda_problem
    assert "offers 0 GPUs" in cpu.log()
    other = Worker.objects.get(hostname=gpu.hostname)
    assert (other.compute_target, other.gpus, other.gpu_inventory, other.cuda_problem) == ("gpu", 0, [], "")

    # each node on its own target's workers, the others on the pipeline's default target
    for attempt in range(2):
        run = wait_for_run(runs.submit(users["owner"], cpu_then_training(), regenerate=True).id, timeout=90)
        ran_on = {nr.node_id: nr.worker.hostname for nr in run.nodes.all()}
        assert run.status == "completed", {nr.node_id: nr.error for nr in run.nodes.all()}
        assert ran_on == {"src": cpu.hostname, "conv": cpu.hostname, "fit": gpu.hostname, "fit2": gpu.hostname}, attempt
    # the other way round: the default and a node's own target swap
    run = wait_for_run(runs.submit(users["owner"], cpu_then_training("gpu", "cpu"), regenerate=True).id, timeout=90)
    assert {nr.node_id: nr.worker.hostname for nr in run.nodes.all()} == {
        "src": gpu.hostname, "conv": gpu.hostname, "fit": cpu.hostname, "fit2": cpu.hostname}

    # a message of a gpu node that reached the cpu worker anyway (its own queue) is handed on
    fresh = cpu_then_training(epochs=2)
    run = Run.objects.create(owner=users["owner"], name="hand on", snapshot=fresh)
    NodeRun.objects.create(run=run, node_id="fit", kind="toy_training")
    [nid] = runs.advance(run.id)
    NodeRun.objects.filter(pk=nid).update(send_due_at=timezone.now() + timedelta(hours=1))  # not by the outbox
    app.send_task(RUN_NODE, args=[nid], queue=host_queue(cpu.hostname))
    run = wait_for_run(run.id, timeout=60)
    assert run.status == "completed" and run.nodes.get().worker.hostname == gpu.hostname

    # validation: a target no worker joined is named with those that exist
    assert problems(owner_client, cpu_then_training("cpu", "gpux")) == [
        "Toy training (fit), parameter 'compute_target': Compute target 'gpux' does not exist: the compute targets are "
        "cpu (1 live worker), gpu (1 live worker)",
        "Toy training (fit2), parameter 'compute_target': Compute target 'gpux' does not exist: the compute targets are "
        "cpu (1 live worker), gpu (1 live worker)"]
    assert problems(owner_client, cpu_then_training("big", "gpu"))[0].startswith(
        "the pipeline's default compute target 'big' does not exist: the compute targets are cpu")
    # Node count x Process count per node against the target's workers: gpu has one
    dist = pipeline([dict(node("d", "toy_distributed"), run_settings={"node_count": 2, "compute_target": "gpu"})], [])
    [too_big] = problems(owner_client, dist)
    assert "Node count x Process count per node is 2 x 1, but compute target 'gpu' has 1 live worker(s)" in too_big
    assert problems(owner_client, dist | {"nodes": [dict(dist["nodes"][0], run_settings={"node_count": 1})]}) == []

    # a target whose only worker is down: its node is queued, waits and says so
    Worker.objects.create(hostname=f"tgt-tpu@{cpu.hostname.split('@')[1]}", compute_target="tpu", cpus=1,
                          last_seen=timezone.now() - timedelta(hours=1), stopped_at=timezone.now() - timedelta(hours=1))
    waiting = cpu_then_training("cpu", "tpu")
    waiting["nodes"] = waiting["nodes"][:3]
    run = runs.submit(users["owner"], waiting, regenerate=True)
    wait_for_run(run.id, timeout=60, until=lambda r: r.nodes.filter(node_id="conv", status="completed").exists())
    message = owner_client.get(f"/api/runs/{run.id}").json()["message"]
    assert message.startswith("Toy training waits for a worker of compute target tpu: none is alive. It starts when one "
                              "joins the target (a worker started with WORKER_COMPUTE_TARGET=tpu)"), message
    assert run.nodes.get(node_id="fit").status == "queued"

    # the Compute page: each target with its workers, GPUs by name and memory, the CUDA problem, the empty target
    page = owner_client.get(reverse("compute")).content.decode()
    sections = dict(re.findall(r'<section class="target" data-target="([^"]*)".*?>(.*?)</section>', page, re.S))
    assert set(sections) == {"cpu", "gpu", "tpu"}
    assert cpu.hostname in sections["cpu"] and gpu.hostname in sections["gpu"]
    assert f"0: {H100} (81559 MiB)" in sections["cpu"] and f"1: {H100} (81559 MiB)" in sections["cpu"]
    assert f"{row.cuda_problem}: offers 0 GPUs, runs modules on its CPU cores" in sections["cpu"]
    assert "1 worker of this target cannot start CUDA" in sections["cpu"]
    assert "No worker of this target is alive" in sections["tpu"] and "0 live workers" in sections["tpu"]
    api = owner_client.get("/api/compute").json()
    assert {t["name"]: t["workers"] for t in api["targets"]} == {"cpu": [cpu.hostname], "gpu": [gpu.hostname], "tpu": []}

    # a worker joins the target: the waiting node runs there
    tpu = start_worker("tgt-tpu", concurrency=1, extra_env={"WORKER_COMPUTE_TARGET": "tpu"})
    run = wait_for_run(run.id, timeout=60)
    assert run.status == "completed" and run.nodes.get(node_id="fit").worker.hostname == tpu.hostname
    assert owner_client.get(f"/api/runs/{run.id}").json()["message"] == ""
    wait_for(lambda: "tpu (1 live worker)" in problems(owner_client, cpu_then_training("cpu", "nope"))[0])
