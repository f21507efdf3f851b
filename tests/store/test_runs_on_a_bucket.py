"""Runs on an S3 bucket (a real server on the loopback), in this process: outputs are kept in the
bucket before a node counts as completed, reuse finds them there with the worker's cache wiped,
and a store that is away or a cache too small fails the node with a sentence saying which, never a
run left hanging."""
import shutil
from pathlib import Path

import pytest

from designer.pipelines.runs import service as runs
from tests.conftest import may_add_components
from tests.datasets.test_datasets_api import image_zip, pets_pipeline, upload
from tests.s3server import running

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def server():
    with running() as s:
        yield s


@pytest.fixture
def on_bucket(server, settings, tmp_path):
    env = server.env(prefix=server.new_prefix())
    settings.ARTIFACT_STORE = env["ARTIFACT_STORE"]
    settings.ARTIFACT_STORE_ENDPOINT_URL = env["ARTIFACT_STORE_ENDPOINT_URL"]
    settings.ARTIFACT_ROOT = tmp_path / "no-artifact-folder"
    settings.WORKER_CACHE_DIR = tmp_path / "cache"
    settings.LOG_SYNC_SECONDS = 0.2
    settings.STORE_RETRY_SECONDS = 1  # a store away is waited for this long (tests/store/test_store_faults.py: longer)
    return settings


def statuses(run):
    return {nr.node_id: (nr.status, nr.error) for nr in run.nodes.all()}


def test_outputs_are_kept_in_the_bucket_and_reused_from_it(on_bucket, owner_client, users):
    from designer.pipelines import artifact_store

    ds = upload(owner_client, image_zip()).json()
    run = runs.submit(users["owner"], pets_pipeline(ds["id"]), inline=True)
    run.refresh_from_db()
    assert run.status == "completed", statuses(run)
    split = run.nodes.get(node_id="split")
    assert split.outputs["results_dataset1"] == f"{run.pk}/split/results_dataset1"
    manifest = artifact_store.get().manifest(split.outputs["results_dataset1"])
    # its index names the convert's images (by their path in a worker's cache): that tree comes with it
    assert manifest is not None and manifest.refs == [f"{run.pk}/convert/image_directory"]
    assert not on_bucket.ARTIFACT_ROOT.exists()
    # the worker's disk keeps the outputs (its cache), not the logs: those are in the bucket
    assert sorted(p.name for p in (on_bucket.WORKER_CACHE_DIR / "trees" / str(run.pk) / "split").iterdir()) == \
        ["results_dataset1", "results_dataset2"]

    shutil.rmtree(on_bucket.WORKER_CACHE_DIR)  # another machine, with nothing cached
    again = runs.submit(users["owner"], pets_pipeline(ds["id"]), inline=True)
    again.refresh_from_db()
    assert {nr.node_id: nr.status for nr in again.nodes.all()} == {"data": "reused", "convert": "reused", "split": "reused"}
    log = owner_client.get(f"/api/runs/{again.pk}/nodes/split/log").json()  # the log of the run that made it
    assert "Split Image Directory" in log["text"]


def test_a_trainings_checkpoint_reaches_the_bucket_while_it_runs_and_goes_once_the_training_removed_it(on_bucket):
    """Another machine can resume an interrupted training from the bucket; an ended one keeps no
    checkpoint there (as on a worker's disk, where Train PyTorch Model removes it at its end)."""
    import time

    from designer.pipelines import artifact_store
    from designer.pipelines.runs import artifacts

    store, key = artifact_store.get(), "7/train/work/checkpoint.pth"
    for ended in (False, True):
        checkpoint = artifacts.node_dir(7, "train") / "work" / "checkpoint.pth"
        with artifacts.LogSync(7, "train"):
            checkpoint.parent.mkdir(parents=True, exist_ok=True)
            checkpoint.write_bytes(b"epoch 1 " * 1000)
            deadline = time.monotonic() + 60
            while store.size(key) != 8000:  # a sync round takes it while the training runs
                assert time.monotonic() < deadline, "the checkpoint never reached the bucket"
                time.sleep(0.05)
            checkpoint.write_bytes(b"epoch 2 " * 2000)
            if ended:
                checkpoint.unlink()
        # a failed node's last checkpoint is there, complete, for the retry; an ended one is gone
        assert store.size(key) == (None if ended else 16000)
        if not ended:  # another machine's next attempt brings it back, with the log so far
            shutil.rmtree(artifacts.node_dir(7, "train"))
            assert artifacts.LogSync(7, "train").restore() == ["work/checkpoint.pth"]
            assert checkpoint.read_bytes() == b"epoch 2 " * 2000

    # a component's own checkpoints ($DESIGNER_CHECKPOINT_DIR: work/checkpoints/), the same way
    own = artifacts.node_dir(8, "script") / "work" / "checkpoints" / "last.pt"
    with artifacts.LogSync(8, "script"):
        own.parent.mkdir(parents=True)
        own.write_bytes(b"step 3")
        (own.parent.parent / "metrics.jsonl").write_text("{}")  # scratch: never kept
        (artifacts.node_dir(8, "script") / "logs").mkdir()
        (artifacts.node_dir(8, "script") / "logs" / "70_driver_log.txt").write_text("epoch 3\n")
    shutil.rmtree(artifacts.node_dir(8, "script"))
    assert sorted(artifacts.LogSync(8, "script").restore()) == ["logs/70_driver_log.txt", "work/checkpoints/last.pt"]
    assert own.read_bytes() == b"step 3"


def test_a_store_that_is_away_fails_the_node_saying_so(on_bucket, owner_client, users, server):
    ds = upload(owner_client, image_zip()).json()
    server.stop()
    run = runs.submit(users["owner"], pets_pipeline(ds["id"]), inline=True)
    run.refresh_from_db()
    assert run.status == "failed"
    data = run.nodes.get(node_id="data")
    assert data.status == "failed" and data.error.startswith("StoreFailed: its inputs could not be fetched from the artifact store")
    assert "cannot be reached" in data.error and "ARTIFACT_STORE=s3://artifacts" in data.error, data.error
    assert "Traceback" not in data.error
    assert {nr.node_id: nr.status for nr in run.nodes.all()} == {"data": "failed", "convert": "not_run", "split": "not_run"}


def test_a_cache_too_small_for_an_input_fails_the_node_naming_the_setting(on_bucket, owner_client, users):
    ds = upload(owner_client, image_zip(per_class=20)).json()
    on_bucket.WORKER_CACHE_MB = 0.001  # 1 KB: the upload (a few KB) does not fit
    run = runs.submit(users["owner"], pets_pipeline(ds["id"]), inline=True)
    run.refresh_from_db()
    data = run.nodes.get(node_id="data")
    assert data.status == "failed" and "WORKER_CACHE_MB" in data.error and "cannot hold" in data.error, data.error


def test_an_uploaded_component_runs_from_the_bucket(on_bucket, owner_client, users):
    """Uploaded into the bucket, read from this machine's cache, run with its code fetched again
    after the cache was wiped (another worker)."""
    import io
    import zipfile

    from django.core.files.uploadedfile import SimpleUploadedFile

    from designer.pipelines import artifact_store
    from tests.pipes import node, pipeline

    may_add_components(users["owner"])
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("echo/component.yaml", "kind: echo_value\nlabel: Echo value\nversion: 1\n"
                   "outputs:\n  out: {type: AnyDirectory}\n"
                   "command: python write.py ${{outputs.out}}\n")
        z.writestr("echo/write.py", "import pathlib, sys\npathlib.Path(sys.argv[1], 'value.txt').write_text('from the bucket')\n")
    answer = owner_client.post("/api/components", {"file": SimpleUploadedFile("echo.zip", buf.getvalue())})
    assert answer.status_code == 201, answer.json()
    assert not on_bucket.ARTIFACT_ROOT.exists()
    shutil.rmtree(on_bucket.WORKER_CACHE_DIR)  # the worker has never seen it
    run = runs.submit(users["owner"], pipeline([node("echo", "echo_value")], []), inline=True)
    run.refresh_from_db()
    assert run.status == "completed", statuses(run)
    with artifact_store.materialized(run.nodes.get().outputs["out"]) as out:
        assert (out / "value.txt").read_text() == "from the bucket"


def test_an_output_records_the_trees_its_index_names_two_steps_up(on_bucket, owner_client, users):
    """Apply Image Transformation's index names Convert's images (read through Split's index): its
    manifest records Convert's tree, so that a machine with nothing cached (a rank of a distributed
    training on another worker) fetches those images with it."""
    import csv

    from designer.pipelines import artifact_store
    from tests.pipes import link, node, pipeline

    ds = upload(owner_client, image_zip()).json()
    doc = pipeline(
        [node("data", "dataset", dataset=ds["id"]), node("convert", "convert_to_image_directory"),
         node("split", "split_image_directory", fraction=0.5), node("init", "init_image_transformation"),
         node("apply", "apply_image_transformation", mode="For inference")],
        [link("data", "convert", "dataset", "input_dataset"), link("convert", "split", "image_directory", "image_directory"),
         link("init", "apply", "image_transformation", "image_transformation"),
         link("split", "apply", "results_dataset1", "image_directory")])
    run = runs.submit(users["owner"], doc, inline=True)
    run.refresh_from_db()
    assert run.status == "completed", statuses(run)
    key = run.nodes.get(node_id="apply").outputs["transformed_image_directory"]
    assert f"{run.pk}/convert/image_directory" in artifact_store.get().manifest(key).refs

    shutil.rmtree(on_bucket.WORKER_CACHE_DIR)  # another machine
    with artifact_store.held([key]) as held, (held[key] / "index.csv").open() as f:
        images = [row["path"] for row in csv.DictReader(f)]
        assert images and all(Path(p).is_file() for p in images), images[:3]
