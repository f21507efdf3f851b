"""Resume after failures: what a killed training costs, and what its checkpoints cost.

    .venv/bin/python bench/resume.py        # FAULTS=20 EPOCHS=3 EVERY=0.05 (minutes) THREADS=2

Train PyTorch Model (ResNet-18 from scratch on scikit-learn's digits, 32x32, batch 32, a random
flip) runs in a child process as a worker's pool process runs it (the module through the engine,
its checkpoint in the node's folder); the parent kills that process (SIGKILL, as the out-of-memory
killer or a lost machine does) at a random moment, FAULTS times in a row, and starts it again each
time as the designer's next attempt does: it goes on from the last checkpoint. Printed:

- no hang: every attempt progressed, and the training ended;
- the time lost per fault against its bound: one checkpoint interval (EVERY minutes) plus a
  restart (measured: from a process's start to its checkpoint loaded, over the attempts);
- the final weights against a run never killed: equal bit for bit (same seed, same threads);
- the checkpoints' overhead: the run never killed with a checkpoint every EVERY minutes, and
  with checkpoints at epochs' ends only; and, from the measured time of one save, the overhead
  at the module's default interval (10 minutes). Target <= 3% at the default.

The faults here are process kills on one machine. A worker lost with its machine, a broker or a
store restarted, are tests (tests/runs/test_worker_loss.py, tests/training/test_resume.py,
tests/store/test_store_faults.py, tests/runs/test_broker_outage.py), not figures of this benchmark.
"""
from __future__ import annotations

import datetime
import os
import platform
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
FAULTS = int(os.environ.get("FAULTS", "20"))
EPOCHS = int(os.environ.get("EPOCHS", "3"))
EVERY = float(os.environ.get("EVERY", "0.05"))  # minutes between checkpoints in the middle of an epoch
THREADS = int(os.environ.get("THREADS", "2"))
DEFAULT_MINUTES = 10.0
OVERHEAD_TARGET = 0.03
PARAMS = {"epochs": EPOCHS, "batch_size": 32, "learning_rate": 0.05, "print_frequency": 0, "warmup_step_number": 20}


def main() -> int:
    work = Path(tempfile.mkdtemp(prefix="bench-resume-", dir=ROOT / "var"))
    try:
        return measure(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def measure(work: Path) -> int:
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, {THREADS} thread(s), "
          f"{datetime.date.today()}; ResNet-18 from scratch, digits 32x32, {EPOCHS} epochs, batch 32")
    child("inputs", work)
    plain = timed(work, "plain", minutes=0)
    every = timed(work, "every", minutes=EVERY)
    saves = [float(x) for x in (work / "saves-every.txt").read_text().split()]
    per_save = sum(saves) / len(saves)
    print(f"never killed, checkpoints at epochs' ends only: {plain:7.1f} s")
    print(f"never killed, a checkpoint every {EVERY * 60:.0f} s too:  {every:7.1f} s   ({len(saves)} saves in all, "
          f"{per_save:.2f} s each, {sum(saves):.1f} s together)")

    rng = random.Random(1)
    node = work / "faulted"
    began, attempts, hung, spawned = time.monotonic(), 0, False, []
    for fault in range(FAULTS):
        spawned.append(time.time())
        proc = start(work, node, EVERY, attempt=fault + 1)
        # killed at a random moment once it has had time to start and load its checkpoint (the
        # restarts so far say how long that takes): somewhere in its next two checkpoint intervals
        time.sleep(rng.uniform(0, EVERY * 60 * 2) + (mean(restarts_of(work, spawned)) or 5.0))
        if proc.poll() is not None:  # it ended before the kill: no more faults to inject
            break
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        attempts += 1
    spawned.append(time.time())
    final = start(work, node, EVERY, attempt=attempts + 1)
    try:
        final.wait(timeout=max(600.0, 4 * every))
    except subprocess.TimeoutExpired:
        final.kill()
        hung = True
    faulted = time.monotonic() - began
    # a restart: from a process's start to its checkpoint loaded (the child notes when it has it)
    restarts = restarts_of(work, spawned)
    restart = mean(restarts)
    print(f"a restart (start, load the checkpoint): {restart:.1f} s on average over {len(restarts)}")
    lost = (faulted - every) / max(1, attempts)
    bound = EVERY * 60 + restart
    same = not hung and final.returncode == 0 and same_weights(work / "every", node)
    print(f"{attempts} kills in a row, then the last attempt: {faulted:7.1f} s in all; "
          f"{'ended' if final.returncode == 0 else 'DID NOT END'}")
    print(f"time lost per fault: {lost:5.1f} s   (bound: one interval {EVERY * 60:.0f} s + a restart {restart:.1f} s "
          f"= {bound:.1f} s) {'met' if lost <= bound else 'MISSED'}")
    print(f"final weights equal to the run never killed's, bit for bit: {same}")
    measured = sum(saves) / every
    at_default = per_save / (DEFAULT_MINUTES * 60)
    print(f"checkpoint overhead: {measured:.1%} of the run with a save every {EVERY * 60:.0f} s (the wall times above: "
          f"{every / plain - 1:+.1%}, within their noise); one save {per_save:.2f} s, so {at_default:.2%} at the default "
          f"{DEFAULT_MINUTES:.0f} minutes (target <= {OVERHEAD_TARGET:.0%}) {'met' if at_default <= OVERHEAD_TARGET else 'MISSED'}")
    ok = not hung and same and lost <= bound and at_default <= OVERHEAD_TARGET
    print("targets met" if ok else "TARGET MISSED")
    return 0 if ok else 1


def start(work: Path, node: Path, minutes: float, attempt: int = 1) -> subprocess.Popen:
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}
    return subprocess.Popen([sys.executable, __file__, "--child", "train", str(work), str(node), str(minutes), str(attempt)],
                            env=env, cwd=ROOT)


def timed(work: Path, name: str, minutes: float) -> float:
    shutil.rmtree(work / name, ignore_errors=True)
    began = time.monotonic()
    proc = start(work, work / name, minutes)
    if proc.wait():
        sys.exit(f"the training of {name} failed")
    return time.monotonic() - began


def restarts_of(work: Path, spawned: list[float]) -> list[float]:
    """Each restart's seconds from its process's start to its checkpoint loaded."""
    noted = work / "resumed.txt"
    resumed = [float(x) for x in noted.read_text().split()] if noted.exists() else []
    return [t - max(s for s in spawned if s <= t) for t in resumed]


def mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def same_weights(a: Path, b: Path) -> bool:
    import torch

    from sdk.formats.model import TRAINED_STATE

    x, y = (torch.load(n / "trained_model" / TRAINED_STATE, map_location="cpu") for n in (a, b))
    return x.keys() == y.keys() and all(torch.equal(x[k], y[k]) for k in x)


# --------------------------------------------------------------------------- child processes


def child(what: str, work: Path, node: Path | None = None, minutes: float = 0, attempt: int = 1):
    from tests.modules.model_helpers import digits_split, image_dir, small_recipe, untrained

    if what == "inputs":
        train, val = digits_split(work / "digits", per_class=180)  # (every digit: about 180 of each)
        untrained(work / "resnet")
        image_dir(work / "train", train, small_recipe(flip=True), "training")
        image_dir(work / "val", val, small_recipe(), "inference")
        return
    import torch

    from designer.engine import executor
    from modules.train_pytorch_model import TrainPyTorchModel
    from sdk.formats.meta import artifact
    from training import checkpoint

    torch.set_num_threads(THREADS)
    inner = checkpoint.save

    def said(run, *args, **kwargs):  # each save timed, for the parent
        began = time.perf_counter()
        inner(run, *args, **kwargs)
        with (node.parent / f"saves-{node.name}.txt").open("a") as f:
            f.write(f"{time.perf_counter() - began}\n")

    checkpoint.save = said
    loaded = checkpoint.resume

    def noted(run, path):  # when this attempt has its checkpoint (the parent measures a restart with it)
        loaded(run, path)
        with (work / "resumed.txt").open("a") as f:
            f.write(f"{time.time()}\n")

    checkpoint.resume = noted
    assert node is not None
    inputs = {"untrained_model": artifact(work / "resnet" / "untrained_model"),
              "training_dataset": artifact(work / "train"), "validation_dataset": artifact(work / "val")}
    executor.execute(TrainPyTorchModel, {"id": node.name, "kind": TrainPyTorchModel.kind,
                                         "parameters": {**PARAMS, "checkpoint_every_minutes": minutes}},
                     inputs, node, lambda e: None, attempt=attempt)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        what, work = sys.argv[2], Path(sys.argv[3])
        if what == "inputs":
            child(what, work)
        else:
            child(what, work, Path(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6]))
        sys.exit(0)
    sys.exit(main())
