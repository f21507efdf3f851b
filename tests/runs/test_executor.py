"""The executor with a real Celery worker (embedded: SQLite broker and database; with
`make test`'s production pass: Redis broker, PostgreSQL)."""
import io
import time
import zipfile
from pathlib import Path

import pytest
import yaml
from django.conf import settings
from PIL import Image

from designer.engine import executor
from designer.pipelines.runs import service as runs
from modules.convert_to_image_directory import ConvertToImageDirectory
from tests.conftest import wait_for_run
from tests.pipes import chain, fan_out, out_path, two_branches
from tests.workers import registered

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.production]


def statuses(run):
    return {nr.node_id: nr.status for nr in run.nodes.all()}


def value(run, node_id):
    return int((out_path(run.nodes.get(node_id=node_id).outputs["out"]) / "value.txt").read_text())


def test_a_chain_runs_on_a_worker(shared_worker, users):
    registered([shared_worker])  # its row, which the previous test's flush removed, is back (the node names it)
    run = wait_for_run(runs.submit(users["owner"], chain(5)).id)
    assert run.status == "completed" and set(statuses(run).values()) == {"completed"}
    assert value(run, "n4") == 5
    assert run.nodes.get(node_id="n2").worker.hostname.endswith(shared_worker.hostname)
    # ARTIFACT_ROOT/<run id>/<node>/<port>/, with _meta.yaml naming the port type, and logs/ beside it
    node_dir = Path(settings.ARTIFACT_ROOT) / str(run.id) / "n4"
    assert out_path(run.nodes.get(node_id="n4").outputs["out"]) == node_dir / "out"
    assert sorted(p.name for p in (node_dir / "out").iterdir()) == ["_meta.yaml", "value.txt"]
    assert yaml.safe_load((node_dir / "out" / "_meta.yaml").read_text()) == {"type": "ImageDirectory"}
    assert sorted(p.name for p in node_dir.iterdir()) == ["logs", "out"]
    log = (node_dir / "logs" / "70_driver_log.txt").read_text()
    assert "Toy add (toy_add v1) starts" in log and "total 5" in log and "finished in" in log


def test_independent_branches_run_at_the_same_time(shared_worker, users, tmp_path):
    hold = tmp_path / "hold"  # both branches wait for it: the run ends only if both were running at once
    hold.touch()
    run = runs.submit(users["owner"], two_branches(hold=str(hold), held=("left", "right")))
    both = wait_for_run(run.id, until=lambda r: statuses(r)["left"] == statuses(r)["right"] == "running")
    assert both.status == "running"
    hold.unlink()
    run = wait_for_run(run.id)
    assert set(statuses(run).values()) == {"completed"} and value(run, "left2") == 12 and value(run, "right") == 15


def test_a_failed_node_stops_its_downstream_while_other_branches_finish(shared_worker, users):
    run = wait_for_run(runs.submit(users["owner"], two_branches(fail_left=True)).id)
    assert run.status == "failed"
    assert statuses(run) == {"src": "completed", "left": "failed", "left2": "not_run", "right": "completed"}
    assert run.nodes.get(node_id="left").error == "ModuleError: asked to fail (parameter Fail is on)"
    assert value(run, "right") == 15


def test_unchanged_nodes_reuse_their_outputs_and_a_changed_one_reruns_with_its_downstream(shared_worker, users):
    first = wait_for_run(runs.submit(users["owner"], chain(4)).id)
    again = wait_for_run(runs.submit(users["owner"], chain(4)).id)
    assert set(statuses(again).values()) == {"reused"}
    assert again.nodes.get(node_id="n3").reused_from.run_id == first.id and value(again, "n3") == 4
    changed = chain(4)
    changed["nodes"][2]["parameters"]["amount"] = 10
    third = wait_for_run(runs.submit(users["owner"], changed).id)
    assert statuses(third) == {"n0": "reused", "n1": "reused", "n2": "completed", "n3": "completed"}
    assert value(third, "n3") == 13
    # the page writes a Float of 0.0 as 0 (a JavaScript number): the same value, the same output
    as_the_browser_saves_it = chain(4)
    as_the_browser_saves_it["nodes"][1]["parameters"]["sleep"] = 0
    fourth = wait_for_run(runs.submit(users["owner"], as_the_browser_saves_it).id)
    assert set(statuses(fourth).values()) == {"reused"}


def test_regenerate_output_reruns_the_node_and_what_depends_on_it(shared_worker, users):
    wait_for_run(runs.submit(users["owner"], chain(3)).id)
    doc = chain(3)
    doc["nodes"][1]["regenerate_output"] = True
    run = wait_for_run(runs.submit(users["owner"], doc).id)
    assert statuses(run) == {"n0": "reused", "n1": "completed", "n2": "completed"}


@pytest.mark.skipif(not settings.CELERY_BROKER_URL.startswith("redis"), reason="Redis only: on the embedded broker a "
                    "worker reserves a few nodes by design (settings.CELERY_WORKER_PREFETCH_MULTIPLIER)")
def test_a_node_waiting_for_a_slot_goes_to_the_next_idle_worker_not_behind_a_busy_ones_nodes(shared_worker, start_worker,
                                                                                            users, tmp_path):
    """A worker whose slots are all taken reserves no more messages (designer/celery.py, FreeSlotsOnly):
    a third branch waits in the broker and the worker that comes up next runs it at once, with the
    message first sent (no resend after RESEND_AFTER_SECONDS, 30 s)."""
    registered([shared_worker])
    hold = tmp_path / "hold"
    hold.touch()
    run = runs.submit(users["owner"], fan_out(hold, 3))
    try:
        wait_for_run(run.id, until=lambda r: r.nodes.filter(status="running").count() == 2)
        third = run.nodes.get(status="queued")
        idle = start_worker("idle", concurrency=1)
        up = time.monotonic()
        wait_for_run(run.id, timeout=20, until=lambda r: r.nodes.filter(status="running").count() == 3)
        third.refresh_from_db()
        # the shared worker's two slots hold b1 and b2: the third runs on the idle one (which may take
        # it before its first heartbeat has written its row: the node then names no worker)
        assert third.worker is None or third.worker.hostname == idle.hostname, third.worker.hostname
        assert third.send_attempts == 1 and time.monotonic() - up < 20  # taken from the broker, not sent again
    finally:
        hold.unlink()
    run = wait_for_run(run.id)
    assert run.status == "completed", statuses(run)


def test_a_run_can_be_cancelled_while_a_node_runs(shared_worker, users):
    run = runs.submit(users["owner"], chain(3, sleep=30))
    wait_for_run(run.id, until=lambda r: r.nodes.filter(node_id="n1", status="running").exists())
    cancelled_at = time.monotonic()
    runs.cancel(run)
    run = wait_for_run(run.id, timeout=30)
    assert time.monotonic() - cancelled_at < 15  # well before n1's 30 s (test_cancel.py's PROMPT_SECONDS)
    assert run.status == "cancelled"
    assert statuses(run) == {"n0": "completed", "n1": "cancelled", "n2": "cancelled"}


def test_events_are_stored_in_order(shared_worker, users):
    run = wait_for_run(runs.submit(users["owner"], chain(2)).id)
    kinds = [(e.node_id, e.type) for e in run.events.all()]  # no log line among them: logs are in the files
    assert kinds == [("n0", "node_queued"), ("n0", "node_started"), ("n0", "node_finished"), ("n1", "node_queued"),
                     ("n1", "node_started"), ("n1", "metric"),
                     ("n1", "node_finished"), ("", "run_finished")]


def test_a_cancelled_convert_stops_between_two_files_and_leaves_no_partial_output(tmp_path):
    """Cancel is seen at a safe point (between two files of the archive), never in the middle of a
    write; the executor then removes the output folder the module had begun."""
    archive = tmp_path / "many.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for i in range(300):
            buffer = io.BytesIO()
            Image.new("RGB", (8, 8), (i % 256, 0, 0)).save(buffer, "PNG")
            z.writestr(f"class{i % 3}/{i:04d}.png", buffer.getvalue())
    asked = []

    def cancelled() -> bool:  # the user presses Cancel once the module has converted 100 files
        asked.append(1)
        return len(asked) > 100

    node_dir = tmp_path / "node"
    inputs = {"input_dataset": executor.InputArtifact(archive, "UploadedFile", {})}
    with pytest.raises(executor.Cancelled):
        executor.execute(ConvertToImageDirectory, {"id": "convert", "kind": ConvertToImageDirectory.kind}, inputs,
                         node_dir, lambda e: None, cancelled)
    assert 100 < len(asked) < 300  # stopped mid-way, not at the end
    assert not (node_dir / "image_directory").exists()
    assert "cancelled by the user" in (node_dir / executor.LOG_DIR / executor.LOG_FILE).read_text()
