"""Distributed training: the same 2-process training run through the designer and through a plain
torchrun of the same training code, in one run.

    .venv/bin/python bench/distributed.py          # LAYOUT=1x2 (or 2x1) EPOCHS=2 ROUNDS=2 BATCH=16 OMP_WAIT_POLICY=PASSIVE

Both sides train resnet18 (from scratch, same seed) on the same images (scikit-learn's digits at
32x32, the split of examples/digits.json), BATCH images per process, with the same threads per
process. The designer side is the real thing: examples/digits.json (up to Train PyTorch Model)
with Run settings LAYOUT (node count x process count per node), submitted to real Celery workers
(one per node), which reserve each other and start torchrun (c10d) with one driver log per rank.
The plain side is `python -m torch.distributed.run --standalone --nproc-per-node 2 -m
training.train` with the same arguments. The sides alternate, ROUNDS times each; the best round
counts (a burst of load from another process should not decide the ratio).

Prints training images/s of each (the training loop, all processes together, mean over epochs;
validation excluded on both sides), the ratio designer / plain (target >= 0.95), and the time
from submit to the first training step (rank 0's first logged step) of the designer side, and of
the plain side from its command.

Runs on the embedded defaults (a fresh SQLite database and broker under var/), or on the
production services when DATABASE_URL and CELERY_BROKER_URL are set.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
LAYOUT = os.environ.get("LAYOUT", "1x2")
NODES, PROCESSES = (int(x) for x in LAYOUT.split("x"))
EPOCHS = int(os.environ.get("EPOCHS", "2"))
ROUNDS = int(os.environ.get("ROUNDS", "2"))
BATCH = int(os.environ.get("BATCH", "16"))
# the same OpenMP wait policy on both sides (the workers, hence their torchrun ranks, inherit it
# from this process, as the plain torchrun does): PASSIVE, so that threads waiting for work do not
# spin on a machine whose cores are shared
OMP_WAIT_POLICY = os.environ.get("OMP_WAIT_POLICY", "PASSIVE")
TARGET = 0.95
FIRST_STEP = "Epoch: [1] [1/"  # train.py's first step line (print frequency 1)


def main() -> int:
    data = Path(tempfile.mkdtemp(prefix="bench-distributed-", dir=ROOT / "var"))
    os.environ.update({"DESIGNER_DATA_DIR": str(data), "ARTIFACT_ROOT": str(data / "artifacts"),
                       "DJANGO_SETTINGS_MODULE": "designer.settings",
                       "OMP_WAIT_POLICY": OMP_WAIT_POLICY})
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from tests.workers import CeleryWorker, stop_all

    workers = [CeleryWorker(f"bench{i}", concurrency=2, log_dir=data) for i in range(NODES)]
    try:
        for w in workers:
            w.wait_ready()
        return _measure(data)
    finally:
        stop_all(workers)
        shutil.rmtree(data, ignore_errors=True)


def _measure(data: Path) -> int:
    from django.contrib.auth import get_user_model

    from designer.pipelines.models import Worker
    from designer.pipelines.runs import service as runs
    from tests.imagesets import digits_folder

    user = get_user_model().objects.create_user("bench")
    dataset = _add_dataset(digits_folder(data / "digits"), user)
    from supervision.launch import slot_threads

    worker = Worker.objects.first()
    threads = slot_threads(worker.cpus, worker.concurrency, PROCESSES)  # what the engine's ranks get
    print(f"resnet18 from scratch, digits 32x32, {LAYOUT} (node count x process count per node), batch {BATCH} per "
          f"process, {EPOCHS} epoch(s), {threads} thread(s) per process, OMP_WAIT_POLICY={OMP_WAIT_POLICY} on both sides, "
          f"{ROUNDS} round(s) each")
    prepared = _wait(runs.submit(user, _pipeline(dataset, train=False)).id)  # the inputs, reused by every round
    results = {"designer": [], "plain": []}
    for r in range(ROUNDS):
        results["designer"].append(_designer_round(user, dataset))
        results["plain"].append(_plain_round(prepared, data / f"plain-{r}", threads))
        for side in ("designer", "plain"):
            f = results[side][-1]
            print(f"  round {r + 1} {side:8s}: {f['images_per_s']:7.1f} images/s (epochs: "
                  f"{', '.join(f'{x:.1f}' for x in f['epochs'])}), first training step {f['first_step_s']:.1f} s after start")
    designer = max(results["designer"], key=lambda f: f["images_per_s"])
    plain = max(results["plain"], key=lambda f: f["images_per_s"])
    ratio = designer["images_per_s"] / plain["images_per_s"]
    print(f"designer (Train PyTorch Model {LAYOUT}): {designer['images_per_s']:7.1f} images/s   submit -> first training step "
          f"{min(f['first_step_s'] for f in results['designer']):.1f} s")
    print(f"plain torchrun (--standalone):       {plain['images_per_s']:7.1f} images/s   command -> first training step "
          f"{min(f['first_step_s'] for f in results['plain']):.1f} s")
    print(f"ratio designer / plain:              {ratio:7.3f}   (target >= {TARGET})")
    print("target met" if ratio >= TARGET else "TARGET MISSED")
    return 0 if ratio >= TARGET else 1


def _add_dataset(folder: Path, user) -> int:
    import io

    from django.core.management import call_command

    out = io.StringIO()
    call_command("add_dataset", str(folder), owner=user.username, stdout=out)
    return int(out.getvalue())


def _pipeline(dataset: int, train: bool = True) -> dict:
    doc = json.loads((ROOT / "examples" / "digits.json").read_text())
    keep = {"score", "evaluate"} | (set() if train else {"train"})
    doc["nodes"] = [n for n in doc["nodes"] if n["id"] not in keep]
    doc["links"] = [x for x in doc["links"] if x["to"]["node"] not in keep]
    for n in doc["nodes"]:
        if n["id"] == "dataset":
            n["parameters"]["dataset"] = dataset
        if n["id"] == "train":
            n["parameters"].update({"epochs": EPOCHS, "batch_size": BATCH, "patience": EPOCHS + 1, "print_frequency": 1})
            n["run_settings"] = {"node_count": NODES, "process_count_per_node": PROCESSES}
    return doc


def _wait(run_id: int, until=None, timeout: float = 1800):
    from designer.pipelines.models import Run

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = Run.objects.get(pk=run_id)
        if run.finished:
            if run.status != "completed":
                errors = {n.node_id: n.error for n in run.nodes.exclude(error="")}
                sys.exit(f"run {run_id} {run.status}: {errors}")
            return run
        # watch closely until the first training step (it is timed), then lightly: this process
        # shares the cores with the training it measures
        time.sleep(0.5 if until is None or until() else 0.02)
    sys.exit(f"run {run_id} still running after {timeout} s")


def _first_step_watch(log: Path, started: float, seen: dict):
    def check() -> bool:
        if "at" not in seen and log.exists() and FIRST_STEP in log.read_text(errors="replace"):
            seen["at"] = time.monotonic() - started
        return "at" in seen
    return check


def _designer_round(user, dataset: int) -> dict:
    from django.conf import settings

    from designer.pipelines.runs import service as runs

    seen: dict = {}
    started = time.monotonic()
    run = runs.submit(user, _pipeline(dataset), regenerate={"train"})
    log = Path(settings.ARTIFACT_ROOT) / str(run.id) / "train" / "logs" / "70_driver_log_0.txt"
    run = _wait(run.id, _first_step_watch(log, started, seen))
    rates = [e.data["value"] for e in run.events.filter(node_id="train", type="metric").order_by("id")
             if e.data["name"] == "training_images_per_second"]
    return {"images_per_s": sum(rates) / len(rates), "epochs": rates, "first_step_s": seen.get("at", float("nan"))}


def _plain_round(prepared, out: Path, threads: int) -> dict:
    nodes = {n.node_id: n for n in prepared.nodes.all()}
    train = next(n for n in _pipeline(0)["nodes"] if n["id"] == "train")["parameters"]
    from modules.train_pytorch_model import training_argv

    argv = training_argv(nodes["resnet"].outputs["untrained_model"], nodes["apply_train"].outputs["transformed_image_directory"],
                    nodes["apply_val"].outputs["transformed_image_directory"], out, train)
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(NODES * PROCESSES),
               "-m", "training.train", *argv]
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "PYTHONPATH": str(ROOT)}  # OMP_WAIT_POLICY: set in main()
    started = time.monotonic()
    first = None
    with subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as proc:
        lines = []
        for line in proc.stdout:
            lines.append(line)
            if first is None and FIRST_STEP in line:
                first = time.monotonic() - started
    if proc.returncode:
        sys.exit("plain torchrun failed:\n" + "".join(lines[-40:]))
    rates = [m["value"] for m in map(json.loads, (out / "metrics.jsonl").read_text().splitlines())
             if m["name"] == "training_images_per_second"]
    return {"images_per_s": sum(rates) / len(rates), "epochs": rates, "first_step_s": first or float("nan")}


if __name__ == "__main__":
    sys.exit(main())
