"""Distributed accuracy: 2 x 1 (two nodes of one process) against one process of the same global
batch, over several seeds: is the gap the code's doing, or the spread of training itself?

    .venv/bin/python bench/distributed_accuracy.py      # SEEDS=1,2,3 EPOCHS=6 GLOBAL_BATCH=32 SYNC_BN=0 PER_CLASS=all SIZE=32

The recipe and data of tests/training/test_distributed_training.py (examples/digits.json's
modules: scikit-learn's digits at 32x32, Split Image Directory 0.75 with seed 0: 1,347 training and
450 validation images), ResNet-18 from scratch, 6 epochs, learning rate 0.05 after 20 warm-up
steps then a cosine, seed s. For each seed: `python -m training.train` in
one process with batch GLOBAL_BATCH, and the same code as the designer starts it for 2 x 1: two
torchruns (c10d rendezvous, `supervision.launch.torchrun_command`), each with one process of batch
GLOBAL_BATCH / 2, under supervision.rank. SYNC_BN=1 adds a third run per seed: 2 x 1 with
--sync-bn. One thread per process (the machine's cores are shared); the runs go one after the
other, so that they do not slow each other.

Prints, per seed, the validation top-1 accuracy after the last epoch (what the test compares)
and of the kept (best) epoch, and the gap 2 x 1 - 1 process; then the mean, standard deviation
and range of the gap against the test's limit, and the spread of one process alone across seeds
(how much training moves with nothing but the seed changed).
"""
import os
import shutil
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from supervision import launch  # noqa: E402 - after the path

SEEDS = [int(s) for s in os.environ.get("SEEDS", "1,2,3").split(",")]
EPOCHS = int(os.environ.get("EPOCHS", "6"))
GLOBAL_BATCH = int(os.environ.get("GLOBAL_BATCH", "32"))
SYNC_BN = os.environ.get("SYNC_BN", "0") == "1"
SIZE = int(os.environ.get("SIZE", "32"))  # pixels a side, as Init Image Transformation resizes
PER_CLASS = None if os.environ.get("PER_CLASS", "all") == "all" else int(os.environ["PER_CLASS"])  # images of each digit
LIMIT = 0.02  # tests/training/test_distributed_training.py before this benchmark: 2 points
THREADS = 1


def prepare(root: Path) -> dict:
    """The test's data: examples/digits.json's modules (Split 0.75 with seed 0, Resize 32), run here."""
    from modules.apply_image_transformation import ApplyImageTransformation
    from modules.init_image_transformation import InitImageTransformation
    from modules.split_image_directory import SplitImageDirectory
    from tests.imagesets import digits_folder
    from tests.modules.model_helpers import image_dir, run, untrained

    every = image_dir(root / "all", digits_folder(root / "digits", per_class=PER_CLASS, size=SIZE))
    parts, _ = run(SplitImageDirectory, root / "split", {"fraction": 0.75, "random_seed": 0}, image_directory=every)
    recipe, _ = run(InitImageTransformation, root / "transform",
                    {"resize": True, "size": SIZE, "center_crop": False, "random_horizontal_flip": False})
    applied = {}
    for name, part, mode in (("train", "results_dataset1", "For training"), ("val", "results_dataset2", "For inference")):
        out, _ = run(ApplyImageTransformation, root / f"apply_{name}", {"mode": mode},
                     image_transformation=recipe["image_transformation"], image_directory=parts[part])
        applied[name] = out["transformed_image_directory"].path
    return {"model": untrained(root / "resnet").path, **applied}


def argv(dirs: dict, out: Path, seed: int, batch: int, sync_bn: bool = False) -> list[str]:
    return ["--model-dir", str(dirs["model"]), "--train-dir", str(dirs["train"]), "--val-dir", str(dirs["val"]),
            "--output-dir", str(out), "--epochs", str(EPOCHS), "--batch-size", str(batch), "--warmup-steps", "20",
            "--lr", "0.05", "--seed", str(seed), "--patience", str(EPOCHS), "--print-freq", "0",
            "--threads", str(THREADS), *(["--sync-bn"] if sync_bn else [])]


def one_process(dirs: dict, out: Path, seed: int) -> dict:
    env = {"OMP_NUM_THREADS": str(THREADS), "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "training.train", *argv(dirs, out, seed, GLOBAL_BATCH)]
    return _wait([launch.NodeProcess(command, env, out.parent / f"{out.name}.log", "1 process")], out)


def two_nodes(dirs: dict, out: Path, seed: int, sync_bn: bool) -> dict:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    nodes = []
    for index in (0, 1):
        command = launch.torchrun_command("training.train", argv(dirs, out, seed, GLOBAL_BATCH // 2, sync_bn), 2, 1,
                                          f"127.0.0.1:{port}", f"bench-{out.name}", is_host=index == 0,
                                          local_addr="127.0.0.1")
        env = launch.rank_environment(out.parent / f"{out.name}-logs", out.parent / f"{out.name}-ranks",
                                      f"node{index}", index, THREADS)
        nodes.append(launch.NodeProcess(command, env, out.parent / f"{out.name}.log", f"node {index}"))
    return _wait(nodes, out)


def _wait(procs: list, out: Path) -> dict:
    while any(p.poll() is None for p in procs):
        time.sleep(0.5)
    codes = [p.stop() for p in procs]
    if any(codes):
        sys.exit(f"a training run failed ({codes}); see {procs[0].mpi_log} and {out.parent}")
    return yaml.safe_load((out / "model.yaml").read_text())


def accuracy(model: dict) -> tuple[float, float]:
    """(top-1 after the last epoch, top-1 of the kept epoch)"""
    return model["history"][-1]["validation_top1_accuracy"], model["validation_top1_accuracy"]


def summary(name: str, gaps: list[float]) -> str:
    spread = statistics.stdev(gaps) if len(gaps) > 1 else 0.0
    over, mean = sum(abs(g) > LIMIT for g in gaps), statistics.mean(gaps)
    return (f"{name}: gap mean {100 * mean:+.2f} points, standard deviation {100 * spread:.2f}, "
            f"range {100 * min(gaps):+.2f} to {100 * max(gaps):+.2f}; |gap| over the {100 * LIMIT:.0f}-point limit "
            f"in {over} of {len(gaps)} seed(s); mean -/+ 3 sd: {100 * (mean - 3 * spread):+.2f} to {100 * (mean + 3 * spread):+.2f} points")


def main() -> int:
    (ROOT / "var").mkdir(exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="bench-distributed-accuracy-", dir=ROOT / "var"))
    try:
        dirs = prepare(root)
        variants = ["2 x 1"] + (["2 x 1 sync-bn"] if SYNC_BN else [])
        rows: dict[str, list[tuple[float, float]]] = {"1 process": [], **{v: [] for v in variants}}
        print(f"digits {SIZE}x{SIZE} ({PER_CLASS or 'all'} of each), ResNet-18 from scratch, {EPOCHS} epochs, "
              f"global batch {GLOBAL_BATCH}, seeds {SEEDS}", flush=True)
        for seed in SEEDS:
            started = time.monotonic()
            rows["1 process"].append(accuracy(one_process(dirs, root / f"one-{seed}", seed)))
            for v in variants:
                rows[v].append(accuracy(two_nodes(dirs, root / f"{v.replace(' ', '')}-{seed}", seed, "sync" in v)))
            line = "  ".join(f"{name} {100 * r[-1][0]:.2f}% (kept {100 * r[-1][1]:.2f}%)" for name, r in rows.items())
            print(f"seed {seed}: {line}  [{time.monotonic() - started:.0f} s]", flush=True)
        one = rows["1 process"]
        print(f"1 process alone across seeds: last epoch {100 * statistics.mean(a for a, _ in one):.2f}% "
              f"(sd {100 * (statistics.stdev(a for a, _ in one) if len(one) > 1 else 0):.2f}), kept "
              f"{100 * statistics.mean(k for _, k in one):.2f}% (sd {100 * (statistics.stdev(k for _, k in one) if len(one) > 1 else 0):.2f})")
        for v in variants:
            two = [a for a, _ in rows[v]]
            print(f"{v} alone across seeds: last epoch {100 * statistics.mean(two):.2f}% "
                  f"(sd {100 * (statistics.stdev(two) if len(two) > 1 else 0):.2f}, range {100 * min(two):.2f}% to {100 * max(two):.2f}%)")
            print(summary(f"{v} - 1 process, last epoch", [a - b for (a, _), (b, _) in zip(rows[v], one)]))
            print(summary(f"{v} - 1 process, kept epoch", [a - b for (_, a), (_, b) in zip(rows[v], one)]))
    finally:
        if not os.environ.get("KEEP"):
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
