"""The digits example on two workers that share no folder (each in a mount namespace of its own, a
private tmpfs over the whole data folder, the artifacts in an S3 bucket) against the same two
workers sharing one artifact folder: the run's wall time, submit to end, each way. Target: the
bucket's within 1.2x of the folder's.

    .venv/bin/python bench/store_digits.py      # PER_CLASS=0 (every digit image; 50: a quick try) ROUNDS=1

Needs what the production path needs: root and `unshare` (the private mount namespaces),
PostgreSQL and Redis (a worker in its own namespace cannot see a SQLite file): BENCH_POSTGRES
(postgres://postgres@127.0.0.1:5432; the bench creates a database of its own there and drops it)
and BENCH_REDIS (redis://127.0.0.1:6379/9). The bucket is moto's server mode on the loopback
(tests/s3server.py): the figures are those of the client path, not of a disk-backed S3 server.

examples/digits.json as a user submits it (Convert, Split, transformations, ResNet-18 from scratch,
Train PyTorch Model 1 x 1, Score, Evaluate) on scikit-learn's digits, two workers of one process
each, started before the clock starts. The folder runs first, then the bucket, ROUNDS times; each
round's runs are deleted before the next way runs (nothing is reused across them). About 8 minutes
on a quiet 2-core machine.
"""
from __future__ import annotations

import datetime
import os
import platform
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
TARGET = 1.2
PER_CLASS = int(os.environ.get("PER_CLASS", "0")) or None
ROUNDS = int(os.environ.get("ROUNDS", "1"))
POSTGRES = os.environ.get("BENCH_POSTGRES", "postgres://postgres@127.0.0.1:5432")
REDIS = os.environ.get("BENCH_REDIS", "redis://127.0.0.1:6379/9")


def main() -> int:
    if os.geteuid() != 0 or not shutil.which("unshare"):
        print("bench/store_digits.py skipped: it needs root and unshare (a private mount namespace per worker)")
        return 0
    import psycopg

    database = f"bench_store_digits_{os.getpid()}"
    with psycopg.connect(f"{POSTGRES}/postgres", autocommit=True) as c:
        c.execute(f'CREATE DATABASE "{database}"')
    for name in [k for k in os.environ if k.startswith("AWS_") or k in ("ARTIFACT_STORE", "ARTIFACT_ROOT")]:
        del os.environ[name]
    os.environ.update(DATABASE_URL=f"{POSTGRES}/{database}", CELERY_BROKER_URL=REDIS, DJANGO_SETTINGS_MODULE="designer.settings",
                      SECRET_KEY="bench-store-digits-" + os.urandom(24).hex(), DEBUG="false",
                      OMP_NUM_THREADS=str(os.cpu_count() or 1), AWS_CONFIG_FILE=os.devnull, AWS_SHARED_CREDENTIALS_FILE=os.devnull)
    import redis

    redis.Redis.from_url(REDIS).flushdb()
    try:
        return measure()
    finally:
        import django.db

        django.db.connections.close_all()
        with psycopg.connect(f"{POSTGRES}/postgres", autocommit=True) as c:
            c.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


def measure() -> int:
    import django

    from tests.conftest import TEST_DATA  # (sets the suite's defaults: its data folder, its toy modules)
    from tests.s3server import running

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    call_command("ensure_admin", stdout=open(os.devnull, "w"))
    print(f"machine: {cpu_model()}, {os.cpu_count()} cores, "
          f"{datetime.date.today().isoformat()}; load average at the start {os.getloadavg()[0]:.1f}", flush=True)
    times: dict[str, list[float]] = {"folder": [], "bucket": []}
    with running() as server:
        for round_ in range(1, ROUNDS + 1):
            folder = TEST_DATA / f"shared-{round_}"
            settings.ARTIFACT_STORE, settings.ARTIFACT_ROOT = str(folder), folder
            env = {"ARTIFACT_ROOT": str(folder), "ARTIFACT_STORE": str(folder)}
            times["folder"].append(one_way("folder", shared_workers, env, TEST_DATA))
            bucket = server.env(prefix=server.new_prefix())
            settings.ARTIFACT_STORE, settings.ARTIFACT_STORE_ENDPOINT_URL = bucket["ARTIFACT_STORE"], bucket["ARTIFACT_STORE_ENDPOINT_URL"]
            settings.ARTIFACT_ROOT = TEST_DATA / "no-artifact-folder"
            times["bucket"].append(one_way("bucket", isolated_workers, bucket, TEST_DATA))
    folder_s, bucket_s = min(times["folder"]), min(times["bucket"])
    ratio = bucket_s / folder_s
    print(f"digits example, two workers: {folder_s:.0f} s on a shared folder, {bucket_s:.0f} s on a bucket with no shared "
          f"folder (best of {ROUNDS} each): {ratio:.2f}x (target <= {TARGET}x): {'met' if ratio <= TARGET else 'MISSED'}")
    return 0 if ratio <= TARGET else 1


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or platform.machine()


def shared_workers(env: dict):
    from tests.conftest import TEST_DATA
    from tests.workers import CeleryWorker

    return [CeleryWorker(name, 1, log_dir=TEST_DATA, extra_env=env) for name in ("shared-a", "shared-b")]


def isolated_workers(env: dict):
    from tests.e2e.test_object_store import isolated_worker

    return [isolated_worker(name, "", env) for name in ("isolated-a", "isolated-b")]


def one_way(way: str, start, env: dict, data: Path) -> float:
    """The digits example on the workers `start(env)` makes (this store in the settings): its seconds."""
    import io
    import json

    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from designer.pipelines.models import Run
    from designer.pipelines.runs import service as runs
    from tests.imagesets import digits_folder
    from tests.workers import registered, stop_all

    workers = start(env)
    try:
        for w in workers:
            w.wait_ready(timeout=120)
        registered(workers, timeout=60)
        images = digits_folder(data / f"digits-{way}-{time.monotonic_ns()}", per_class=PER_CLASS)
        out = io.StringIO()
        call_command("add_dataset", str(images), owner="admin", name=f"digits-{way}-{time.monotonic_ns()}", stdout=out)
        doc = json.loads((ROOT / "examples" / "digits.json").read_text())
        next(n for n in doc["nodes"] if n["id"] == "dataset")["parameters"]["dataset"] = int(out.getvalue())
        began = time.monotonic()
        run = runs.submit(get_user_model().objects.get(username="admin"), doc)
        while not Run.objects.get(pk=run.pk).finished:
            time.sleep(0.5)
        seconds = time.monotonic() - began
        run.refresh_from_db()
        nodes = {nr.node_id: (nr.status, round(nr.duration or 0), nr.worker.hostname.split("@")[0] if nr.worker else "")
                 for nr in run.nodes.order_by("started_at")}
        failed = {k: nr.error[-500:] for k, nr in ((nr.node_id, nr) for nr in run.nodes.all()) if nr.status == "failed"}
        print(f"  {way}: {seconds:.0f} s, run {run.status}; each node (status, s, worker): {nodes}"
              + (f"; failed: {failed}" if failed else ""), flush=True)
        if run.status != "completed":
            raise SystemExit(f"the run on the {way} failed")
        Run.objects.all().delete()
        return seconds
    finally:
        stop_all(workers)


if __name__ == "__main__":
    sys.exit(main())
