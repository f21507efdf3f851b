"""Training throughput: Train PyTorch Model inside the engine against a plain PyTorch loop.

    .venv/bin/python bench/train.py            # EPOCHS=2 ROUNDS=2 BATCH=32 THREADS=<torch default>

Both sides train resnet18 (from scratch, same seed) on the same images (scikit-learn's digits at
32x32, the training split of examples/digits.json), with the same transform, batch size, optimizer
and thread count, each in a fresh child process, alternately (ROUNDS times each; the best round
counts, so that a burst of load from another process does not decide the ratio). The engine side
is the real thing: examples/digits.json submitted and run by the engine (`runs.run_inline`, as
`run_pipeline --inline` does) with its log, metrics, heartbeat and database. The plain side is a
bare loop: forward, loss, backward, step.

Prints training images/s of each (training loop only, per epoch; validation excluded on both
sides), the ratio engine / plain (target >= 0.95), the engine node's wall time, and the peak
resident memory (ru_maxrss) of each training process.

The engine's images/s is measured by this benchmark, not taken from the module: the child wraps
`training.train.train_one_epoch` (the node runs in the child's process, `run_inline`, 1 x 1) with
a clock and a loader that counts the images handed out, so each epoch's figure is wall time over
images seen, timed from outside the training code. The module's own `training_images_per_second`
metric is printed beside it, as a check of what users see in the Metrics pane.
"""
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
EPOCHS = int(os.environ.get("EPOCHS", "2"))
ROUNDS = int(os.environ.get("ROUNDS", "2"))
BATCH = int(os.environ.get("BATCH", "32"))
TARGET = 0.95


def main():
    data = Path(tempfile.mkdtemp(prefix="bench-train-", dir=ROOT / "var"))
    threads = int(os.environ.get("THREADS", "0")) or _torch_default_threads()
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE", "DESIGNER_DATA_DIR": str(data),
           "ARTIFACT_ROOT": str(data / "artifacts"), "DJANGO_SETTINGS_MODULE": "designer.settings"}
    print(f"resnet18 from scratch, digits 32x32, batch {BATCH}, {EPOCHS} epoch(s), {threads} thread(s), "
          f"{ROUNDS} round(s) each")
    try:
        return _measure(data, threads, env)
    finally:
        shutil.rmtree(data, ignore_errors=True)


def _measure(data: Path, threads: int, env: dict) -> int:
    results = {"engine": [], "plain": []}
    for r in range(ROUNDS):
        for side in ("engine", "plain"):  # the engine first: its split feeds the plain loop
            out = subprocess.run([sys.executable, __file__, "--child", side, str(data), str(threads), str(r)],
                                 env=env, capture_output=True, text=True, cwd=ROOT, check=False)
            if out.returncode:
                sys.exit(f"{side} run failed:\n{out.stdout[-2000:]}\n{out.stderr[-4000:]}")
            figures = json.loads(out.stdout.strip().splitlines()[-1])
            results[side].append(figures)
            reported = (f", module's own metric {figures['reported_images_per_s']:.1f}"
                        if "reported_images_per_s" in figures else "")
            print(f"  round {r + 1} {side:6s}: {figures['images_per_s']:7.1f} images/s "
                  f"(epochs: {', '.join(f'{x:.1f}' for x in figures['epochs'])}{reported}), "
                  f"peak RSS {figures['maxrss_mb']:.0f} MB")
    engine = max(results["engine"], key=lambda f: f["images_per_s"])
    plain = max(results["plain"], key=lambda f: f["images_per_s"])
    ratio = engine["images_per_s"] / plain["images_per_s"]
    print(f"engine (Train PyTorch Model): {engine['images_per_s']:7.1f} images/s (timed by this benchmark; the "
          f"module reports {engine['reported_images_per_s']:.1f})   node wall time {engine['node_s']:.1f} s "
          f"(incl. validation, saving)   peak RSS {engine['maxrss_mb']:.0f} MB")
    print(f"plain PyTorch loop:           {plain['images_per_s']:7.1f} images/s   peak RSS {plain['maxrss_mb']:.0f} MB")
    print(f"ratio engine / plain:         {ratio:7.3f}   (target >= {TARGET})")
    print("target met" if ratio >= TARGET else "TARGET MISSED")
    return 0 if ratio >= TARGET else 1


def _torch_default_threads() -> int:
    out = subprocess.run([sys.executable, "-c", "import torch; print(torch.get_num_threads())"],
                         capture_output=True, text=True, check=True)
    return int(out.stdout)


# --------------------------------------------------------------------------- child processes


def child(side: str, data: Path, threads: int, round_no: int) -> dict:
    import django  # OMP_WAIT_POLICY is in the environment already: see training/__init__.py

    django.setup()
    import torch

    torch.set_num_threads(threads)
    figures = engine_run(data, round_no) if side == "engine" else plain_run(data)
    figures["maxrss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return figures


def engine_run(data: Path, round_no: int) -> dict:
    import yaml
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from designer.engine import graph
    from designer.pipelines.models import Dataset
    from designer.pipelines.runs import service as runs

    call_command("migrate", verbosity=0)
    timed = _time_training_from_outside()
    User = get_user_model()
    user = User.objects.filter(username="bench").first() or User.objects.create_user("bench")
    dataset = Dataset.objects.filter(owner=user).first()
    if dataset is None:
        from tests.imagesets import digits_folder

        folder = digits_folder(data / "digits")
        out = _call("add_dataset", str(folder), owner="bench", name="digits")
        dataset_id = int(out)
    else:
        dataset_id = dataset.id
    doc = graph.parse_text((ROOT / "examples" / "digits.json").read_bytes())
    nodes = {n["id"]: n for n in doc["nodes"]}
    nodes["dataset"]["parameters"]["dataset"] = dataset_id
    nodes["train"]["parameters"].update(epochs=EPOCHS, batch_size=BATCH, print_frequency=0)
    doc["nodes"] = [n for n in doc["nodes"] if n["id"] not in ("score", "evaluate")]
    doc["links"] = [link for link in doc["links"] if link["to"]["node"] not in ("score", "evaluate")]
    run = runs.submit(user, doc, regenerate={"train"})
    runs.run_inline(run.id)
    run.refresh_from_db()
    train = run.nodes.get(node_id="train")
    if train.status != "completed":
        raise SystemExit(f"the Train node ended {train.status}: {train.error}")
    model = yaml.safe_load((Path(train.outputs["trained_model"]) / "model.yaml").read_text())
    reported = [h["training_images_per_second"] for h in model["history"]]
    if len(timed) != len(reported):
        raise SystemExit(f"timed {len(timed)} training epoch(s) from outside, the module reports {len(reported)}")
    apply_train = run.nodes.get(node_id="apply_train").outputs["transformed_image_directory"]
    (data / "train_dir.txt").write_text(apply_train)
    return {"images_per_s": sum(timed) / len(timed), "epochs": timed,
            "reported_images_per_s": sum(reported) / len(reported),
            "node_s": (train.finished_at - train.started_at).total_seconds()}


def _time_training_from_outside() -> list[float]:
    """Wrap training.train.train_one_epoch: each call appends images seen / wall time to the list."""
    from training import train

    epochs: list[float] = []
    inner = train.train_one_epoch

    def timed(model, criterion, optimizer, data_loader, *args, **kwargs):
        counting = _CountingLoader(data_loader)
        started = time.perf_counter()
        result = inner(model, criterion, optimizer, counting, *args, **kwargs)
        epochs.append(counting.seen / (time.perf_counter() - started))
        return result

    train.train_one_epoch = timed  # _train looks it up in the module at each epoch
    return epochs


class _CountingLoader:
    """A DataLoader as train_one_epoch sees it, counting the images it hands out."""

    def __init__(self, loader):
        self.loader, self.seen = loader, 0
        self.dataset = loader.dataset  # training.loading looks at it (decoded on the device, or not)

    def __len__(self):
        return len(self.loader)

    def __iter__(self):
        for images, targets in self.loader:
            self.seen += len(targets)
            yield images, targets


def _call(*args, **kwargs) -> str:
    import io

    from django.core.management import call_command

    out = io.StringIO()
    call_command(*args, stdout=out, **kwargs)
    return out.getvalue().strip()


def plain_run(data: Path) -> dict:
    """The loop a PyTorch user writes by hand, on the engine's training split."""
    import torch
    import torchvision

    from sdk.formats.image_directory import read_path
    from training.data import IMAGENET_NORMALIZE, ImageDirDataset
    from training.transforms import build_transform

    image_dir = read_path(Path((data / "train_dir.txt").read_text()))
    transform = build_transform(image_dir.transforms, None, IMAGENET_NORMALIZE)
    dataset = ImageDirDataset(image_dir, image_dir.classes, transform)
    torch.manual_seed(1)
    model = torchvision.models.resnet18(num_classes=len(image_dir.classes))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-4)
    criterion = torch.nn.CrossEntropyLoss()
    loader = torch.utils.data.DataLoader(dataset, batch_size=BATCH, shuffle=True,
                                         generator=torch.Generator().manual_seed(1))
    epochs = []
    for _ in range(EPOCHS):
        model.train()
        seen, started = 0, time.perf_counter()
        for images, targets in loader:
            loss = criterion(model(images), targets)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            seen += images.shape[0]
        epochs.append(seen / (time.perf_counter() - started))
    return {"images_per_s": sum(epochs) / len(epochs), "epochs": epochs}


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        print(json.dumps(child(sys.argv[2], Path(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))))
    else:
        sys.exit(main())
