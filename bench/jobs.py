"""The Jobs page at 10,000 runs: the time of one page of 50, as a signed-in user's browser asks for
it, for each filter and sort the page offers.

    .venv/bin/python bench/jobs.py                   # SQLite in a temporary folder (the embedded default)
    DATABASE_URL=postgres://... .venv/bin/python bench/jobs.py   # PostgreSQL (a database `bench_jobs` is made)

RUNS (10,000) finished runs of one user are stored directly (their experiments, tags, sources,
statuses, durations and final metrics varied), with SWEEPS (100) sweeps and another user's 2,000
runs beside them; then each case of the page is asked for REPEAT (7) times through Django's test
client (the view, its queries and its template: all but the socket): the median and the worst,
and the number of SQL queries. The same is measured with 100 runs: a page that loads every run
would grow 100-fold; one that lets the database filter, sort and cut grows by what sorting 10,000
rows in SQL costs. Target: every case's median under 250 ms at 10,000 runs.
"""
import os
import random
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.engine import _recreate_postgres_database  # noqa: E402 - after the path
from bench.store import machine  # noqa: E402

RUNS = int(os.environ.get("RUNS", 10_000))
SWEEPS = int(os.environ.get("SWEEPS", 100))
REPEAT = int(os.environ.get("REPEAT", 7))
TARGET_MS = 250
CASES = {
    "newest first (the default)": {},
    "page 200 (near the last)": {"page": "200"},
    "experiment = exp-7": {"experiment": "exp-7"},
    "status = failed": {"status": "failed"},
    "source = api": {"source": "api"},
    "tag team=cv": {"tag": "team=cv"},
    "name contains 'run 12'": {"q": "run 12"},
    "sorted by duration": {"sort": "-duration"},
    "sorted by accuracy, 2 metric columns": {"sort": "-metric:accuracy", "columns": ["accuracy", "loss"]},
    "accuracy at least 0.9": {"metric": "accuracy", "op": "ge", "value": "0.9"},
    "runs only, by name": {"type": "run", "sort": "name"},
}


def setup():
    data = Path(tempfile.mkdtemp(prefix="bench-jobs-", dir=ROOT / "var"))
    (data / "static").mkdir()
    os.environ.update(DESIGNER_DATA_DIR=str(data), ARTIFACT_ROOT=str(data / "artifacts"), DJANGO_SETTINGS_MODULE="designer.settings")
    if os.environ.get("DATABASE_URL", "").startswith("postgres"):
        os.environ["DATABASE_URL"] = os.environ["DATABASE_URL"].rsplit("/", 1)[0] + "/bench_jobs"
        _recreate_postgres_database(os.environ["DATABASE_URL"])
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def store(user, n: int, sweeps: int) -> None:
    """`n` finished runs and `sweeps` sweeps of `user`, varied as a team's would be."""
    from django.utils import timezone

    from designer.pipelines.models import Run, Sweep

    rnd, now = random.Random(n), timezone.now()
    statuses, sources = ["completed"] * 8 + ["failed", "cancelled"], ["page", "page", "api", "headless", "sweep"]
    rows = []
    for i in range(n):
        started = now - timedelta(minutes=n - i)
        acc = rnd.random()
        rows.append(Run(owner=user, name=f"run {i}", snapshot={}, status=rnd.choice(statuses), experiment=f"exp-{i % 40}",
                        tags={"team": rnd.choice(["cv", "nlp", "ops"]), "seed": str(i % 5)}, source=rnd.choice(sources),
                        started_at=started, finished_at=started + timedelta(seconds=rnd.randint(1, 3600)),
                        metrics={"accuracy": {"last": acc, "best": acc, "node": "train", "steps": 5},
                                 "loss": {"last": 1 - acc, "best": 1 - acc, "node": "train", "steps": 5}}))
    made = Run.objects.bulk_create(rows, batch_size=1000)
    for start in range(0, len(made), 1000):  # submitted_at is auto_now_add: spread it as the runs were
        for r in made[start:start + 1000]:
            r.submitted_at = r.started_at
        Run.objects.bulk_update(made[start:start + 1000], ["submitted_at"])
    Sweep.objects.bulk_create(Sweep(owner=user, name=f"sweep {i}", snapshot={}, config={}, study_name=f"bench-{user.pk}-{i}",
                                    experiment=f"exp-{i % 40}", source="page", status="completed") for i in range(sweeps))


def measure(client, params: dict) -> tuple[float, float, int]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    times = []
    for _ in range(REPEAT):
        with CaptureQueriesContext(connection) as queries:
            started = time.perf_counter()
            answer = client.get("/jobs/", params)
            times.append((time.perf_counter() - started) * 1000)
        assert answer.status_code == 200, answer.status_code
    return statistics.median(times), max(times), len(queries.captured_queries)


def main() -> int:
    print(machine(), flush=True)
    setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.test import Client

    print(f"database: {settings.DATABASES['default']['ENGINE'].rsplit('.', 1)[-1]}; {RUNS:,} runs and {SWEEPS} sweeps "
          f"of one user, 2,000 runs of another; {REPEAT} requests a case", flush=True)
    users = get_user_model().objects
    small, big, other = users.create_user("small"), users.create_user("big"), users.create_user("other")
    store(small, 100, 1)
    store(big, RUNS, SWEEPS)
    store(other, 2000, 10)
    clients = {}
    for who in (small, big):
        clients[who.username] = Client(HTTP_HOST="localhost")
        clients[who.username].force_login(who)
    ok = True
    print(f"{'case':40} {'100 runs':>10} {f'{RUNS:,} runs':>12} {'worst':>8} {'queries':>8}  ratio")
    for name, params in CASES.items():
        little, _, _ = measure(clients["small"], params)
        median, worst, queries = measure(clients["big"], params)
        ok &= median < TARGET_MS
        print(f"{name:40} {little:8.1f} ms {median:9.1f} ms {worst:6.0f} ms {queries:8d}  {median / little:5.1f}x")
    print(f"target: every median under {TARGET_MS} ms at {RUNS:,} runs: {'met' if ok else 'NOT met'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
