"""Several machines with no shared disk: the artifact store in an S3 bucket (a real S3 server on
the loopback, tests/s3server.py), two Celery workers that cannot see each other's files nor the
test's (each in its own mount namespace, with a private tmpfs over the whole test data folder:
`unshare --mount`, as root), and a web app (this test process) with no artifact folder at all.

The digits story (a sweep whose trials train 2 x 1 across both workers, the best registered and
deployed from the browser, packaged on a worker, served from the bucket and scored), and a dataset
uploaded through the API converted on one worker and split, transformed and previewed from the other: every input crosses machines through the bucket (an ImageDirectory's
index names its input's images, so the trees it refers to come along), logs reach the Outputs +
logs pane while nodes run, the Visualize pane and its thumbnails, downloads and logs are served
from the store."""
import contextlib
import os
import shutil
import sys
import time
from pathlib import Path

import pytest
from django.conf import settings

from designer.engine import statuses as st
from designer.pipelines.runs import service as runs
from tests.conftest import TEST_DATA
from tests.datasets.test_datasets_api import image_zip, upload
from tests.e2e.conftest import shot_dir, sign_in
from tests.machine import patience
from tests.pipes import link, node, pipeline
from tests.production import SECRET_KEY
from tests.s3server import s3_server  # noqa: F401 - a fixture
from tests.servers import Daphne
from tests.workers import CeleryWorker, registered, stop_all, worker_database_url

pytestmark = [
    pytest.mark.production,
    pytest.mark.browser,
    pytest.mark.timeout(300),
    pytest.mark.skipif(not (settings.DATABASES["default"]["ENGINE"].endswith("postgresql")
                            and settings.CELERY_BROKER_URL.startswith("redis")),
                       reason="workers on several machines share PostgreSQL and Redis (make test's production pass)"),
    pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"),
                       reason="a private mount namespace per worker needs root and unshare"),
]
CACHE = TEST_DATA / "worker-cache"  # the same path on every worker, a different disk behind it
# the worker's command in a mount namespace of its own: a tmpfs over the test data folder hides
# every file of the test process and of the other worker (the log file is already open)
ISOLATED = 'mount -t tmpfs tmpfs "$PRIVATE" && mkdir -p "$WORKER_CACHE_DIR" && exec "$@"'


def isolated_worker(name: str, target: str, store_env: dict) -> CeleryWorker:
    args = ["-c", "import os, sys; os.execvp('unshare', sys.argv)", "--mount", "--propagation", "private",
            "sh", "-c", ISOLATED, "sh", sys.executable, "-m", "celery", "-A", "designer.celery", "worker",
            "-c", "1", "-n", "{hostname}", "-l", "warning", "--without-mingle", "--without-gossip"]
    env = {**store_env, "PRIVATE": str(TEST_DATA), "WORKER_CACHE_DIR": str(CACHE), **({"WORKER_COMPUTE_TARGET": target} if target else {}),
           "ARTIFACT_ROOT": str(TEST_DATA / "no-such-folder"), "DEBUG": "false", "SECRET_KEY": SECRET_KEY,
           "LOG_SYNC_SECONDS": "0.5"}
    return CeleryWorker(name, 1, log_dir=TEST_DATA, extra_env=env, args=args)


@pytest.fixture(scope="module")
def bucket_env(s3_server):  # noqa: F811 - the fixture
    """A prefix of the bucket for the module's workers and tests."""
    return s3_server.env(prefix=s3_server.new_prefix())


@pytest.fixture
def bucket_settings(bucket_env, settings, tmp_path):
    """This process (the web app) on the bucket, with no artifact folder at all."""
    env = bucket_env
    settings.ARTIFACT_STORE = env["ARTIFACT_STORE"]
    settings.ARTIFACT_STORE_ENDPOINT_URL = env["ARTIFACT_STORE_ENDPOINT_URL"]
    settings.ARTIFACT_ROOT = tmp_path / "not-an-artifact-folder"
    return env


@contextlib.contextmanager
def isolated_workers(names_and_targets, store_env: dict, django_db_blocker):
    """Isolated workers, started and ready while the block runs, stopped after."""
    workers = [isolated_worker(name, target, store_env) for name, target in names_and_targets]
    try:
        with django_db_blocker.unblock():
            for w in workers:
                w.wait_ready(timeout=patience(60))
        yield workers
    finally:
        stop_all(workers)


@pytest.fixture
def two_machines(bucket_settings, django_db_blocker):
    """Two isolated workers, each of a compute target of its own (a test places each node)."""
    with isolated_workers([("left", "left"), ("right", "right")], bucket_settings, django_db_blocker) as workers:
        yield workers


def on(target: str, n: dict) -> dict:
    return {**n, "run_settings": {"compute_target": target}}


def transformed_pipeline(dataset_id: int) -> dict:
    """Dataset and Convert on the left machine; Split, Init and Apply on the right one."""
    return pipeline(
        [on("left", node("data", "dataset", dataset=dataset_id)), on("left", node("convert", "convert_to_image_directory")),
         on("right", node("split", "split_image_directory", fraction=0.5)),
         on("right", node("init", "init_image_transformation")),
         on("right", node("apply", "apply_image_transformation", mode="For inference"))],
        [link("data", "convert", "dataset", "input_dataset"), link("convert", "split", "image_directory", "image_directory"),
         link("init", "apply", "image_transformation", "image_transformation"),
         link("split", "apply", "results_dataset1", "image_directory")])


def wait_for(run, timeout: float, workers=()):
    deadline = time.monotonic() + patience(timeout)
    while time.monotonic() < deadline:
        run.refresh_from_db()
        if run.status in st.TERMINAL:
            return run
        time.sleep(0.3)
    raise AssertionError(f"run {run.pk} still {run.status}: " + str({nr.node_id: (nr.status, nr.error) for nr in run.nodes.all()})
                         + "".join(f"\n--- worker {w.name}:\n{w.log()}" for w in workers))


def test_a_pipeline_on_two_workers_that_share_no_folder(two_machines, bucket_settings, owner_client, users,
                                                        transactional_db, s3_server, browser, request):  # noqa: F811
    ds = upload(owner_client, image_zip(per_class=4)).json()
    assert "id" in ds, ds
    assert not Path(settings.ARTIFACT_ROOT).exists()  # the upload went to the bucket
    run = runs.submit(users["owner"], transformed_pipeline(ds["id"]))
    wait_for(run, 120, two_machines)
    nodes = {nr.node_id: nr for nr in run.nodes.all()}
    assert run.status == "completed", {k: (v.status, v.error) for k, v in nodes.items()}
    where = {k: v.worker.hostname.split("@")[0] for k, v in nodes.items()}
    assert where == {"data": "left", "convert": "left", "split": "right", "init": "right", "apply": "right"}, where
    # what the database keeps: keys of the store, never a path on a worker
    assert nodes["apply"].outputs == {"transformed_image_directory": f"{run.pk}/apply/transformed_image_directory"}

    # the Outputs + logs pane, from the store
    files = owner_client.get(f"/api/runs/{run.pk}/nodes/apply/files").json()
    assert {f["path"] for f in files["outputs"]["transformed_image_directory"]} == {"_meta.yaml", "index.csv"}
    assert [f["path"] for f in files["logs"]] == ["70_driver_log.txt"]
    log = owner_client.get(f"/api/runs/{run.pk}/nodes/split/log").json()
    assert "Split Image Directory" in log["text"] and "finished in" in log["text"], log
    got = owner_client.get(f"/api/runs/{run.pk}/nodes/apply/files/transformed_image_directory/index.csv")
    assert got.status_code == 200 and b"".join(got.streaming_content).startswith(b"path,label")

    # Visualize and a thumbnail: the index (written on the right machine) names an image of the
    # convert's tree (written on the left one) by its path in a worker's cache
    pane = owner_client.get(f"/runs/{run.pk}/nodes/apply/visualize").content.decode()
    assert "cats" in pane and "dogs" in pane and "cannot" not in pane, pane[:2000]
    image = owner_client.get(f"/runs/{run.pk}/nodes/apply/images/transformed_image_directory/0")
    assert image.status_code == 200 and b"".join(image.streaming_content)[:8] == b"\x89PNG\r\n\x1a\n"

    # the Compute page: the right machine fetched convert's output from the bucket (a miss) and found
    # split's, which it wrote itself, in its cache (a hit); the left machine never fetched anything of the right's
    deadline = time.monotonic() + patience(30)
    while time.monotonic() < deadline:
        caches = {w["hostname"].split("@")[0]: w["cache"] for w in owner_client.get("/api/compute").json()["workers"]}
        if (caches.get("right") or {}).get("hits", 0) >= 1:
            break
        time.sleep(0.5)
    assert caches["right"]["hits"] >= 1 and caches["right"]["misses"] >= 1 and caches["right"]["bytes"] > 0, caches
    page = owner_client.get("/compute").content.decode()
    assert "found here" in page and "fetched" in page

    # what the user sees, from a web app whose only artifact store is the bucket
    web = Daphne({**os.environ, **bucket_settings, "DATABASE_URL": worker_database_url(), "DEBUG": "true",
                  "ARTIFACT_ROOT": str(TEST_DATA / "no-such-folder")}, name="daphne-bucket").wait_ready()
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    try:
        sign_in(context, web, users["owner"])
        page = context.new_page()
        page.goto(f"{web.url}/compute")
        page.wait_for_selector("td.cache")
        assert "found here" in page.inner_text("table")
        page.screenshot(path=str(shot_dir(request) / "compute.png"), full_page=True)
        page.goto(f"{web.url}/runs/{run.pk}/nodes/apply/visualize")
        page.wait_for_selector("img")
        loaded = page.evaluate("Array.from(document.images).filter(i => i.complete && i.naturalWidth > 0).length")
        assert loaded >= 1, page.content()[:2000]
        page.screenshot(path=str(shot_dir(request) / "visualize.png"), full_page=True)
    finally:
        context.close()
        web.stop()

    # the right machine fetched convert's output (and the dataset never): it read it from the bucket
    store_keys = {k for k, _ in _objects(s3_server, bucket_settings)}
    # (its small files, the index and the images, in one pack: designer/engine/packs.py)
    assert [k for k in store_keys if k.startswith(f"{run.pk}/convert/image_directory/")] == []
    assert len([k for k in store_keys if k.startswith(f"_packs/{run.pk}/convert/image_directory/")]) == 1
    assert f"_manifests/{run.pk}/apply/transformed_image_directory.json" in store_keys


def _objects(server, env):
    prefix = env["ARTIFACT_STORE"].split("/", 3)[3] + "/"
    found = []
    for page in server.client().get_paginator("list_objects_v2").paginate(Bucket=server.bucket, Prefix=prefix):
        found += [(o["Key"][len(prefix):], o["Size"]) for o in page.get("Contents", [])]
    return found


@pytest.fixture(scope="module")
def two_cpu_workers(bucket_env, django_db_setup, django_db_blocker):
    """Two isolated workers of one compute target (a distributed node's nodes run on one target),
    for the tests of the module that need them."""
    with isolated_workers([("one", ""), ("two", "")], bucket_env, django_db_blocker) as workers:
        yield workers


@pytest.fixture
def two_cpu_machines(two_cpu_workers, bucket_settings, transactional_db):
    """Both registered (a test's database flush removes their rows until their next beat)."""
    return registered(two_cpu_workers, timeout=patience(30))


def test_a_2_x_1_job_on_two_workers_that_share_no_folder_keeps_every_ranks_log(two_cpu_machines, owner_client, users,
                                                                                transactional_db):
    from tests.runs.test_distributed import toy

    run = runs.submit(users["owner"], toy(2, 1, steps=40, step_seconds=0.25))
    # live: rank 1's lines (written on the other machine) reach the pane while the job runs
    live, deadline = "", time.monotonic() + patience(90)
    while time.monotonic() < deadline and "step 2:" not in live:
        run.refresh_from_db()
        assert run.status not in st.TERMINAL, f"the job ended before its log was seen: {live!r}"
        answer = owner_client.get(f"/api/runs/{run.pk}/nodes/toy/log", {"file": "70_driver_log_1.txt"})
        live = answer.json().get("text", "") if answer.status_code == 200 else ""
        time.sleep(0.2)
    assert "step 2:" in live and run.nodes.get().status == "running", live
    wait_for(run, 120, two_cpu_machines)
    nr = run.nodes.get()
    assert run.status == "completed", (nr.error, [w.log() for w in two_cpu_machines])
    logs = {f["path"] for f in owner_client.get(f"/api/runs/{run.pk}/nodes/toy/files").json()["logs"]}
    # rank 1's log was written on the other machine: it reached the store all the same
    assert {"70_driver_log_0.txt", "70_driver_log_1.txt", "70_mpi_log.txt"} <= logs, logs
    rank1 = owner_client.get(f"/api/runs/{run.pk}/nodes/toy/log", {"file": "70_driver_log_1.txt"}).json()["text"]
    assert rank1.strip(), rank1
    got = owner_client.get(f"/api/runs/{run.pk}/nodes/toy/files/out/world.txt")
    assert b"".join(got.streaming_content) == b"2"


def test_each_node_goes_to_the_worker_that_caches_its_inputs(two_cpu_machines, owner_client, users, transactional_db):
    """Two idle workers of one target: every node after the first runs where its input already is
    (by chance, six nodes on one worker of two: 1 in 32), and the other worker fetches nothing."""
    ds = upload(owner_client, image_zip(per_class=8)).json()
    chain = [node("data", "dataset", dataset=ds["id"]), node("convert", "convert_to_image_directory")] + [
        node(f"split{i}", "split_image_directory", fraction=0.75) for i in range(4)]
    links = [link("data", "convert", "dataset", "input_dataset"), link("convert", "split0", "image_directory", "image_directory")] + [
        link(f"split{i - 1}", f"split{i}", "results_dataset1", "image_directory") for i in range(1, 4)]
    run = runs.submit(users["owner"], pipeline(chain, links))
    wait_for(run, 120, two_cpu_machines)
    assert run.status == "completed", {nr.node_id: (nr.status, nr.error) for nr in run.nodes.all()}
    where = {nr.node_id: nr.worker.hostname.split("@")[0] for nr in run.nodes.all()}
    assert len(set(where.values())) == 1, where
    idle = ({"one", "two"} - set(where.values())).pop()
    deadline = time.monotonic() + patience(30)
    while time.monotonic() < deadline:
        caches = {w["hostname"].split("@")[0]: w["cache"] for w in owner_client.get("/api/compute").json()["workers"]}
        if caches.get(idle) is not None and (caches.get(where["data"]) or {}).get("hits", 0) >= 5:
            break
        time.sleep(0.5)
    assert caches[idle]["bytes_fetched"] == 0 and caches[where["data"]]["hits"] >= 5, caches


@pytest.mark.timeout(900)  # a sweep of two 2 x 1 digits trainings, a packaging and a serving process
def test_the_digits_story_on_two_workers_that_share_no_folder(two_cpu_machines, bucket_settings, users, browser,
                                                               request, tmp_path, transactional_db):
    """The original's story with nothing shared but PostgreSQL, Redis and the bucket: a sweep of the
    digits example's learning rate whose trials train 2 x 1 across the two isolated workers, the
    best trial registered and deployed from the browser (a web app with no artifact folder), the
    version packaged on a worker and served by a scoring process from the bucket, and scored."""
    import json
    import subprocess

    from designer.pipelines.models import Endpoint, ModelVersion, Pipeline
    from designer.pipelines.sweeps import service as sweeps
    from tests.e2e.helpers import node as cell
    from tests.registry.registry_helpers import add_digits
    from tests.serving.helpers import Serving, png
    from tests.sweeps.test_sweeps import finished

    owner = users["owner"]
    doc = json.loads((Path(__file__).parents[2] / "examples" / "digits.json").read_text())
    doc["nodes"] = [n for n in doc["nodes"] if n["id"] not in ("score", "evaluate")]
    doc["links"] = [x for x in doc["links"] if x["to"]["node"] not in ("score", "evaluate")]
    for n in doc["nodes"]:
        if n["id"] == "dataset":
            n["parameters"]["dataset"] = add_digits(owner, tmp_path)  # 12 images a digit, uploaded to the bucket
        if n["id"] == "transform":
            n["parameters"]["size"] = 32
        if n["id"] == "train":
            n["parameters"].update({"epochs": 2, "batch_size": 8, "warmup_step_number": 0, "print_frequency": 0})
            n["run_settings"] = {"node_count": 2, "process_count_per_node": 1}
            n["bindings"] = {"learning_rate": "learning_rate"}
    doc["parameters"] = [{"name": "learning_rate", "type": "float", "default": 0.05, "min": 1e-7, "max": 1.0}]
    pipeline = Pipeline.objects.create(owner=owner, name="digits across machines", draft=doc)
    config = {"sampling": "grid", "parameter_space": [{"name": "learning_rate", "expression": "choice", "values": [0.05, 1e-6]}],
              "policy": {"type": "NoTerminationPolicy"}, "primary_metric_name": "validation_top1_accuracy",
              "primary_metric_goal": "maximize", "max_total_runs": 2, "max_concurrent_runs": 1}
    sweep = finished(sweeps.start(owner, doc, config, pipeline=pipeline), timeout=600)
    trials = list(sweep.trials.values("number", "status", "error"))
    assert sweep.status == st.COMPLETED and sweep.best_trial is not None, (sweep.message, trials, _train_logs(sweep))
    best = sweep.best_trial.run
    train = best.nodes.get(node_id="train")
    # the 2 x 1 training ran on both machines; rank 1's log, written on the other one, is in the bucket
    from designer.pipelines.runs import artifacts

    assert {launch.worker.hostname.split("@")[0] for launch in train.launches.all()} == {"one", "two"}
    assert {"70_driver_log_0.txt", "70_driver_log_1.txt"} <= {f["path"] for f in artifacts.list_area(best.pk, "train", "logs")}

    serving = Serving(TEST_DATA, **bucket_settings, ARTIFACT_ROOT=str(TEST_DATA / "no-such-folder"),
                      WORKER_CACHE_DIR=str(TEST_DATA / "serving-cache"))
    request.addfinalizer(serving.stop)
    web = Daphne({**os.environ, **bucket_settings, "DATABASE_URL": worker_database_url(), "DEBUG": "true",
                  "ARTIFACT_ROOT": str(TEST_DATA / "no-such-folder"), "SERVING_URL": serving.url},
                 name="daphne-story").wait_ready()
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    try:
        sign_in(context, web, owner)
        page = context.new_page()
        page.goto(f"{web.url}/pipelines/{pipeline.pk}/?run={best.pk}")
        page.wait_for_selector("html[data-designer-ready=true]")
        page.wait_for_selector("#run-banner >> text=completed")
        page.click("[role=tab][data-tab=outputs]")
        cell(page, "train").click()
        page.wait_for_selector("#tab-outputs h3 >> text=Train PyTorch Model in run")
        page.wait_for_selector("#log-text:has-text('Epoch')")  # the driver log, read from the bucket
        page.click("#register-model")
        page.fill("#register-name", "digits-across")
        page.click("#register-submit")
        page.wait_for_selector("#register-done")
        version = ModelVersion.objects.get(model__name="digits-across", version=1)
        assert version.run_id == best.pk
        page.click("#register-deploy")
        page.wait_for_url(f"{web.url}/endpoints/digits-across/")
        page.wait_for_selector("html[data-endpoint-loaded]")
        # a worker packages the version from the bucket, the scoring process loads it from there
        page.wait_for_selector("html[data-endpoint-status=healthy]", timeout=patience(300_000))
        page.screenshot(path=str(shot_dir(request) / "endpoint.png"), full_page=True)
        page.click("#show-curl-key")
        command = page.inner_text("#curl")
    finally:
        context.close()
        web.stop()
    (tmp_path / "image.png").write_bytes(png(size=(32, 32)))
    done = subprocess.run(["bash", "-c", command + " --silent --show-error --fail-with-body"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, (done.stdout, done.stderr, serving.log())
    answer = json.loads(done.stdout)
    assert answer["classes"] == [str(d) for d in range(10)] and len(answer["predictions"]) == 1, answer
    assert Endpoint.objects.get(name="digits-across").version == version
    assert not Path(settings.ARTIFACT_ROOT).exists()  # nothing of it went to a folder of this machine


def _train_logs(sweep) -> str:
    """The logs of each trial's training, from the bucket (for a failure's message)."""
    from designer.pipelines.runs import artifacts

    text = ""
    for trial in sweep.trials.exclude(run=None):
        for f in artifacts.list_area(trial.run_id, "train", "logs"):
            with contextlib.suppress(Exception):
                body = artifacts.artifact_store.get().read_bytes(f"{artifacts.node_key(trial.run_id, 'train')}/logs/{f['path']}", 1 << 20)
                text += f"\n--- trial {trial.number} {f['path']}:\n" + body.decode(errors="replace")[-20000:]
    return text
