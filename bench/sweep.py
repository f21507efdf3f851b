"""Sweeps: the scheduling overhead per trial, and the epochs a Median policy saves.

    .venv/bin/python bench/sweep.py            # EPOCHS=12 EPOCH_SECONDS=0.2

Real Celery workers: on the production services (DATABASE_URL and CELERY_BROKER_URL set: PostgreSQL
and Redis), two workers of one task at a time each; on the embedded defaults (a fresh SQLite
database and broker), what `make run` starts: one worker of two processes (the embedded broker
lets a busy worker reserve several messages, so two one-process workers would not share trials
evenly: settings.py). The pipeline is a source
(the "Convert" every trial shares, computed once) feeding a small training module
(tests/toy_modules.py ToyTuning: per-epoch `score`, EPOCH_SECONDS an epoch, stops when its
policy asks), so that what is measured is the sweep's machinery, not torch.

1. Overhead: 8 trials, 2 at a time, NoTerminationPolicy. Per trial, the time from the trial's
   start to its recorded end minus its nodes' own run times (the training node, and the shared
   source while the trial waited for it), and the gap between a trial's end and the start of the
   trial that takes its slot. Target: their sum under 1 s.
2. Epochs saved: the same 8 trials where half the learning rates are 1000x too small, with
   MedianStoppingPolicy and with NoTerminationPolicy. Target: at least 30% fewer epochs with the
   Median policy, the best trial unchanged.
"""
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
EPOCHS = int(os.environ.get("EPOCHS", "12"))
EPOCH_SECONDS = float(os.environ.get("EPOCH_SECONDS", "0.2"))
OVERHEAD_TARGET = 1.0
SAVED_TARGET = 0.30
GOOD = [0.01, 0.008, 0.006, 0.005]
POOR = [0.00001, 0.000012, 0.000014, 0.000016]


def main() -> int:
    data = Path(tempfile.mkdtemp(prefix="bench-sweep-", dir=ROOT / "var"))
    os.environ.update({"DESIGNER_DATA_DIR": str(data), "ARTIFACT_ROOT": str(data / "artifacts"),
                       "DJANGO_SETTINGS_MODULE": "designer.settings", "DESIGNER_EXTRA_MODULES": "tests.toy_modules",
                       "HEARTBEAT_SECONDS": os.environ.get("HEARTBEAT_SECONDS", "1")})
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from tests.workers import CeleryWorker, stop_all

    production = bool(os.environ.get("CELERY_BROKER_URL"))
    shape = [1, 1] if production else [2]
    workers = [CeleryWorker(f"bench-sweep-{i}", concurrency=c, log_dir=data) for i, c in enumerate(shape)]
    print(f"{'production (PostgreSQL + Redis): 2 workers x 1 process' if production else 'embedded (SQLite): 1 worker x 2 processes'}")
    try:
        for w in workers:
            w.wait_ready()
        return _measure()
    finally:
        stop_all(workers)
        shutil.rmtree(data, ignore_errors=True)


def _pipeline(value: int) -> dict:
    from tests.pipes import link, node, pipeline

    doc = pipeline([node("src", "toy_source", value=value, sleep=1.0),
                    node("fit", "toy_tuning", epochs=EPOCHS, epoch_seconds=EPOCH_SECONDS)], [link("src", "fit")])
    doc["parameters"] = [{"name": "lr", "type": "float", "default": 0.01}]
    doc["nodes"][1]["bindings"] = {"learning_rate": "lr"}
    return doc


def _sweep(user, value: int, rates: list[float], policy: dict):
    from designer.pipelines.sweeps import service as sweeps

    config = {"sampling": "grid", "parameter_space": [{"name": "lr", "expression": "choice", "values": rates}],
              "policy": policy, "primary_metric_name": "score", "primary_metric_goal": "maximize",
              "max_total_runs": len(rates), "max_concurrent_runs": 2}
    sweep = sweeps.start(user, _pipeline(value), config)
    while not sweep.finished:  # the sweep moves on its own (run_finished, heartbeat); this only watches
        time.sleep(0.2)
        sweep.refresh_from_db()
    return sweep


def _overheads(sweep) -> tuple[list[float], list[float]]:
    from designer.pipelines.models import NodeRun

    trials = list(sweep.trials.select_related("run").order_by("started_at"))
    src_done = NodeRun.objects.filter(run__trial__sweep=sweep, node_id="src", status="completed").get().finished_at
    inside = []
    for t in trials:
        fit = NodeRun.objects.get(run=t.run, node_id="fit")
        waited = max(0.0, (src_done - t.started_at).total_seconds())
        inside.append((t.finished_at - t.started_at).total_seconds() - fit.duration - waited)
    ends = sorted(t.finished_at for t in trials)
    starts = sorted(t.started_at for t in trials)[2:]  # the trials that took a freed slot
    gaps = [(s - e).total_seconds() for s, e in zip(starts, ends, strict=False)]
    return inside, gaps


def _measure() -> int:
    from django.contrib.auth import get_user_model

    user, _ = get_user_model().objects.get_or_create(username="bench-sweep")
    no_policy = {"type": "NoTerminationPolicy"}
    sweep = _sweep(user, 1, GOOD + POOR, no_policy)
    inside, gaps = _overheads(sweep)
    overhead = statistics.median(inside) + statistics.median(gaps)
    print(f"8 trials, 2 at a time, {EPOCHS} epochs of {EPOCH_SECONDS:g} s: sweep {sweep.status} "
          f"in {(sweep.finished_at - sweep.started_at).total_seconds():.1f} s")
    print(f"overhead inside a trial: median {statistics.median(inside):.3f} s (max {max(inside):.3f}); "
          f"slot refill gap: median {statistics.median(gaps):.3f} s (max {max(gaps):.3f})")
    print(f"scheduling overhead per trial: {overhead:.3f} s (target < {OVERHEAD_TARGET:g} s: "
          f"{overhead / OVERHEAD_TARGET:.2f}x of the target) {'OK' if overhead < OVERHEAD_TARGET else 'MISSED'}")

    plain = _sweep(user, 2, _interleaved(), no_policy)
    median = _sweep(user, 3, _interleaved(), {"type": "MedianStoppingPolicy", "evaluation_interval": 1,
                                             "delay_evaluation": 1})
    epochs_plain = sum(t.epochs for t in plain.trials.all())
    epochs_median = sum(t.epochs for t in median.trials.all())
    saved = 1 - epochs_median / epochs_plain
    same_best = plain.best_trial.values == median.best_trial.values
    stopped = median.trials.filter(status="early_terminated").count()
    print(f"half the trials poor: {epochs_plain} epochs with NoTerminationPolicy, {epochs_median} with "
          f"MedianStoppingPolicy ({stopped} trial(s) early terminated): {100 * saved:.0f}% fewer "
          f"(target >= {100 * SAVED_TARGET:.0f}%: {saved / SAVED_TARGET:.2f}x) {'OK' if saved >= SAVED_TARGET else 'MISSED'}")
    print(f"best trial: {plain.best_trial.values} without a policy, {median.best_trial.values} with it: "
          f"{'unchanged' if same_best else 'CHANGED'}")
    return 0 if overhead < OVERHEAD_TARGET and saved >= SAVED_TARGET and same_best else 1


def _interleaved() -> list[float]:
    return [x for pair in zip(GOOD, POOR, strict=True) for x in pair]


if __name__ == "__main__":
    sys.exit(main())
