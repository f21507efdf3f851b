"""Faults between the workers and the bucket, with real processes: a Celery worker and the
maintenance process on the production path (PostgreSQL, Redis), the store a real S3 server reached
through a gate (tests/gate.py) the test closes, opens or slows.

- The store goes away as a node ends: for a moment (a restart), the node waits for it and
  completes; for longer than STORE_RETRY_SECONDS, the node is failed with a sentence naming the
  setting and the bucket, the run ends (nothing waits for ever), the pages say the store is away,
  and the same pipeline submitted again once it is back reuses what was kept and completes.
- A worker killed (SIGKILL) half way through an upload: the node goes back to the queue as lost
  (Max retries), the files it had sent are no output for anyone (a tree exists once its manifest is
  written, last), and another worker runs it again to a complete output."""
import time

import pytest
from django.conf import settings

from designer.engine import statuses as st
from designer.pipelines.models import NodeRun
from designer.pipelines.runs import service as runs
from tests.conftest import TEST_DATA, wait_for_run
from tests.gate import Gate
from tests.machine import patience
from tests.pipes import chain, link, node, pipeline
from tests.s3server import s3_server  # noqa: F401 - a fixture
from tests.workers import CeleryWorker, MaintenanceProcess, stop_all

pytestmark = [
    pytest.mark.production,
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(300),
    pytest.mark.skipif(not settings.DATABASES["default"]["ENGINE"].endswith("postgresql"),
                       reason="a worker and the maintenance process beside it: make test's production pass"),
]


@pytest.fixture
def gated(s3_server, settings, tmp_path):  # noqa: F811 - the fixture
    """The bucket behind a gate, for this process (the web app) and the processes it starts."""
    gate = Gate(s3_server.port).start()
    env = {**s3_server.env(prefix=s3_server.new_prefix()), "ARTIFACT_STORE_ENDPOINT_URL": gate.url,
           "ARTIFACT_ROOT": str(tmp_path / "no-artifact-folder"), "LOG_SYNC_SECONDS": "0.3"}
    settings.ARTIFACT_STORE = env["ARTIFACT_STORE"]
    settings.ARTIFACT_STORE_ENDPOINT_URL = gate.url
    settings.ARTIFACT_ROOT = tmp_path / "no-artifact-folder"
    try:
        yield gate, env
    finally:
        gate.close()


@pytest.fixture
def processes(gated):
    """Start workers on the gated bucket (and the maintenance process beside them); all stopped after."""
    _, env = gated
    started, maintenance = [], MaintenanceProcess("faults", TEST_DATA, env)

    def worker(name: str, **more_env) -> CeleryWorker:
        w = CeleryWorker(name, 1, log_dir=TEST_DATA,
                         extra_env={**env, "WORKER_CACHE_DIR": str(TEST_DATA / f"cache-{name}"), **more_env})
        started.append(w)
        return w.wait_ready(timeout=patience(60))

    try:
        yield worker
    finally:
        stop_all([w for w in started if w.proc.poll() is None])
        maintenance.end()


def nodes(run):
    return {nr.node_id: (nr.status, nr.error) for nr in run.nodes.all()}


def held_chain(hold, name="through an outage") -> dict:
    doc = chain(3, name=name)
    doc["nodes"][1]["parameters"]["hold_file"] = str(hold)
    return doc


def test_a_store_away_while_a_node_ends_is_waited_for_and_one_away_too_long_fails_the_node_saying_so(
        gated, processes, users, owner_client, tmp_path):
    gate, _ = gated
    worker = processes("outage", STORE_RETRY_SECONDS=str(patience(20)))
    hold = tmp_path / "hold"

    # away for a moment (a restart of the store) while n1 ends: n1 waits for it, then completes
    hold.touch()
    run = runs.submit(users["owner"], held_chain(hold))
    wait_for_run(run.id, until=lambda r: r.nodes.filter(node_id="n1", status=st.RUNNING).exists())
    gate.close()
    hold.unlink()
    deadline = time.monotonic() + patience(60)
    while "cannot be kept in the artifact store yet" not in worker.log():
        assert time.monotonic() < deadline, (nodes(run), worker.log())
        time.sleep(0.1)
    assert run.nodes.get(node_id="n1").status == st.RUNNING  # waiting, not failed
    gate.open()
    run = wait_for_run(run.id, timeout=120)
    assert nodes(run) == {"n0": ("completed", ""), "n1": ("completed", ""), "n2": ("completed", "")}, nodes(run)
    log = owner_client.get(f"/api/runs/{run.id}/nodes/n1/log").json()["text"]
    assert "cannot be reached" in log and "trying again for up to" in log and "were kept in the artifact store after" in log, log

    # away for longer than STORE_RETRY_SECONDS: n1 fails saying why, the run ends (nothing hangs)
    hold = tmp_path / "hold2"  # (another parameter: n1 runs again rather than being reused)
    hold.touch()
    run = runs.submit(users["owner"], held_chain(hold, name="through a long outage"))
    wait_for_run(run.id, until=lambda r: r.nodes.filter(node_id="n1", status=st.RUNNING).exists())
    gate.close()
    hold.unlink()
    run = wait_for_run(run.id, timeout=120)
    assert run.status == "failed", nodes(run)
    status, error = nodes(run)["n1"]
    assert status == "failed" and error.startswith("StoreFailed: its outputs could not be kept in the artifact store"), error
    assert "STORE_RETRY_SECONDS" in error and "cannot be reached" in error and settings.ARTIFACT_STORE in error, error
    assert "Traceback" not in error
    assert nodes(run)["n2"] == ("not_run", "") and nodes(run)["n0"][0] == "reused"
    assert run.nodes.get(node_id="n1").outputs == {}  # nothing recorded that is not in the store
    # the pages say where the files are and why they cannot be had, never a 500 or a traceback
    answer = owner_client.get(f"/api/runs/{run.id}/nodes/n0/files")
    assert answer.status_code == 503 and "cannot be reached" in answer.json()["error"], answer.content[:500]
    assert worker.proc.poll() is None  # the worker lives on (a store away is not a lost worker)

    # back: the same pipeline again reuses what was kept and completes
    gate.open()
    again = wait_for_run(runs.submit(users["owner"], chain(3, name="through a long outage")).id, timeout=120)
    assert nodes(again) == {"n0": ("reused", ""), "n1": ("completed", ""), "n2": ("completed", "")}, nodes(again)
    got = owner_client.get(f"/api/runs/{again.id}/nodes/n2/files/out/value.txt")
    assert got.status_code == 200 and b"".join(got.streaming_content) == b"3"


def test_a_worker_killed_during_an_upload_leaves_no_output_and_the_node_runs_again(
        gated, processes, users, owner_client, s3_server):  # noqa: F811 - the fixture
    from designer.pipelines import artifact_store
    from designer.pipelines.runs import artifacts

    gate, env = gated
    doomed = processes("doomed")
    # files of 1.2, 2.4, 3.6 and 4.8 MB (objects of their own, not packed), each through a slow link
    # at 256 KB/s: the first is in the bucket after about 5 s, the last after about 20 s
    blob = pipeline([node("blob", "toy_blob", files=4, file_kb=1200), node("after", "toy_add", amount=1)],
                    [link("blob", "after")], "a large output")
    gate.slow(256 * 1024)
    run = runs.submit(users["owner"], blob)
    key = f"{run.pk}/blob/out"
    prefix = env["ARTIFACT_STORE"].split("/", 3)[3]
    deadline = time.monotonic() + patience(120)
    while not s3_server.client().list_objects_v2(Bucket=s3_server.bucket, Prefix=f"{prefix}/{key}/").get("KeyCount"):
        run.refresh_from_db()
        assert time.monotonic() < deadline and run.status not in st.TERMINAL, (nodes(run), doomed.log())
        time.sleep(0.05)
    doomed.kill()  # half way: some of its files are in the bucket, its manifest is not
    store = artifact_store.get()
    assert store.manifest(key) is None and not artifacts.exists(key)

    # the maintenance loop sends the node back to the queue (Max retries): what it sent is no output
    run = wait_for_run(run.id, timeout=60, until=lambda r: r.nodes.get(node_id="blob").attempt == 2)
    lost = run.nodes.get(node_id="blob")
    [attempt] = lost.attempts
    assert lost.status == "queued" and attempt["reason"].startswith("WorkerLostError:") and doomed.hostname in attempt["reason"]
    assert lost.outputs == {} and store.manifest(key) is None and not artifacts.exists(key)
    assert NodeRun.objects.filter(status=st.COMPLETED, node_id="blob").count() == 0

    gate.slow(None)
    processes("spare")  # another machine takes it
    again = wait_for_run(run.id, timeout=120)
    assert nodes(again) == {"blob": ("completed", ""), "after": ("completed", "")}, nodes(again)
    manifest = store.manifest(again.nodes.get(node_id="blob").outputs["out"])
    assert manifest is not None and [f["size"] for name, f in sorted(manifest.files.items()) if name.startswith("blob")] == [
        1200 * 1024 * n for n in (1, 2, 3, 4)]
