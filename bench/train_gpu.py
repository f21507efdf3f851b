"""Training throughput on a GPU: Train PyTorch Model through the engine against a plain PyTorch
loop on the same JPEG images, and against the GPU's synthetic limit (issue 26).

    python bench/train_gpu.py                 # on a machine with a GPU: ResNet-50, 224 px, batch 128
    python bench/train_gpu.py --smoke         # anywhere, in a minute: resnet18, 64 px, on the CPU

Needs torch, torchvision, Pillow, numpy and PyYAML only (no Django, no Celery: a GPU machine
may have nothing else). The engine side is `designer.engine.executor.execute(TrainPyTorchModel,
...)`, what a worker runs for a node at Run settings 1 x 1, with its defaults: device and
precision chosen from the machine, loader processes sized from its cores, JPEGs decoded where
training/loading.py chooses. Each side runs in a fresh child process.

Rows (img/s of a training epoch, data loading included; the best epoch after the first, whose
cuDNN autotuning and loader start-up would otherwise count):
- engine (auto): Train PyTorch Model as a user runs it;
- engine (--decode host) / (--decode device): the same, images decoded in loader processes / by
  nvJPEG on the GPU, cropped and resized on the GPU a batch at a time (training/crops.py);
  `SIDES=engine_host@5,engine_device@5` runs them on 5 cores (the process's affinity), which is
  how 'auto' chose its threshold (training/loading.py);
- engine (recipe per image): the loader processes decode with Pillow and run the whole recipe image
  by image (the path before training/crops.py, and still the path of recipes that are not geometry);
- plain fp32: the loop a user writes, 12 loader processes, pinned memory;
- plain bf16 + channels_last: the same with mixed precision (the issue's reference, 2,584 img/s on an H100);
- synthetic: forward + backward + step on one batch already on the GPU, bf16 + channels_last.
Targets: engine (auto) >= 1.0x plain bf16 + channels_last, and >= 0.9x synthetic. Peak GPU memory per row.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
TARGET_PLAIN, TARGET_SYNTHETIC = 1.0, 0.9


def config(smoke: bool) -> dict:
    if smoke:
        return {"model": "resnet18", "size": 64, "batch": 16, "images": 256, "val": 64, "epochs": 2, "device": "cpu",
                "workers": 2}
    return {"model": "resnet50", "size": 224, "batch": 128, "images": int(os.environ.get("IMAGES", "12800")),
            "val": 1024, "epochs": int(os.environ.get("EPOCHS", "3")), "device": "cuda",
            "workers": int(os.environ.get("PLAIN_WORKERS", "12"))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="small sizes on the CPU: checks that the bench runs")
    parser.add_argument("--data", default="", help="where the images are made (kept for the next run)")
    parser.add_argument("--child", nargs=2, metavar=("SIDE", "DATA"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    cfg = config(args.smoke)
    if args.child:
        side, data = args.child
        print(json.dumps(child(side)(cfg, Path(data))))
        return 0
    import torch

    from bench import gpu_data

    if not args.smoke and not torch.cuda.is_available():
        print("no GPU here: run with --smoke to check the bench itself, or on a machine with a GPU")
        return 2
    data = Path(args.data or tempfile.mkdtemp(prefix="bench-train-gpu-"))
    t = time.perf_counter()
    gpu_data.make_jpegs(data / "train", cfg["images"], seed=1)
    gpu_data.make_jpegs(data / "val", cfg["val"], seed=2)
    print(f"{cfg['images']} training + {cfg['val']} validation JPEGs made in {time.perf_counter() - t:.0f} s")
    print(machine(cfg))
    print(f"{cfg['model']} from scratch, {cfg['size']} px, batch {cfg['batch']}, {cfg['epochs']} epochs a side")
    rows: dict = {}
    failed: list = []
    sides = "synthetic,plain_bf16,plain_fp32,engine_per_image,engine_host,engine_device,engine"
    for side in os.environ.get("SIDES", sides).split(","):
        if args.smoke and side == "synthetic":
            continue
        out = subprocess.run([sys.executable, __file__, *(["--smoke"] if args.smoke else []), "--child", side,
                              str(data)], capture_output=True, text=True, cwd=ROOT, check=False)
        if out.returncode:  # the other sides still run: a GPU machine's time is short
            print(f"{side}: FAILED\n{out.stdout[-3000:]}\n{out.stderr[-5000:]}", flush=True)
            failed.append(side)
            continue
        rows[side] = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"  {name(side):34s} {rows[side]['img_s']:8.1f} img/s   peak GPU memory "
              f"{rows[side]['peak_gib']:5.1f} GiB   {rows[side].get('note', '')}", flush=True)
    code = report(rows, args.smoke) if "engine" in rows and "plain_bf16" in rows else 1
    return 1 if failed else code


NAMES = {"engine": "engine (auto)", "engine_host": "engine (--decode host)", "engine_device": "engine (--decode device)",
         "engine_per_image": "engine (recipe per image)", "engine_inline": "engine, prefetch in the training thread",
         "engine_switch": "engine, GIL switch every 0.1 ms",
         "plain_fp32": "plain fp32", "plain_bf16": "plain bf16 + channels_last", "synthetic": "synthetic (batch on the GPU)"}


def name(side: str) -> str:
    kind, _, cores = side.partition("@")
    return NAMES[kind] + (f" on {cores} cores" if cores else "")


def machine(cfg) -> str:
    import torch
    import torchvision

    if torch.cuda.is_available():
        p = torch.cuda.get_device_properties(0)
        gpu = f"{p.name}, {p.total_memory / 2**30:.0f} GiB, {torch.cuda.device_count()} GPU(s)"
    else:
        gpu = "no GPU"
    return (f"machine: {gpu}; {os.cpu_count()} CPU cores ({platform.processor() or platform.machine()}); "
            f"torch {torch.__version__}, torchvision {torchvision.__version__}")


def report(rows: dict, smoke: bool) -> int:
    engine = rows["engine"]["img_s"]
    ok = True
    plain = rows["plain_bf16"]["img_s"]
    print(f"engine / plain bf16 + channels_last: {engine / plain:6.2f}   (target >= {TARGET_PLAIN})")
    ok &= engine / plain >= TARGET_PLAIN
    if "synthetic" in rows:
        synthetic = rows["synthetic"]["img_s"]
        print(f"engine / synthetic:                  {engine / synthetic:6.2f}   (target >= {TARGET_SYNTHETIC})")
        ok &= engine / synthetic >= TARGET_SYNTHETIC
    if smoke:
        print("smoke run on the CPU: the ratios say nothing of a GPU")
        return 0
    print("targets met" if ok else "TARGET MISSED")
    return 0 if ok else 1


# --------------------------------------------------------------------------- children


def _peak() -> float:
    import torch

    return torch.cuda.max_memory_allocated() / 2**30 if torch.cuda.is_available() else 0.0


def _prefetched_inline(data_loader, prepare, device):
    """An experiment (side engine_inline): NVIDIA DeepLearningExamples' data_prefetcher, in the
    training thread instead of a thread of its own; the next batch's copy and crop are queued on a
    side stream before the current batch is handed over."""
    import torch

    from training import loading

    stream = torch.cuda.Stream(device)
    batches = loading.iterate(data_loader)

    def load():
        batch = next(batches, None)
        if batch is None:
            return None
        with torch.cuda.stream(stream):
            return prepare(batch)

    upcoming = load()
    while upcoming is not None:
        current = torch.cuda.current_stream(device)
        current.wait_stream(stream)
        images, targets = upcoming
        images.record_stream(current)
        targets.record_stream(current)
        upcoming = load()
        yield images, targets


def engine_side(decode: str, batch_crops: bool = True, variant: str = ""):
    def run(cfg, data: Path) -> dict:
        from bench import gpu_data
        from training import loading

        loading.BATCH_CROPS = batch_crops
        if variant == "inline":
            loading._prefetched = _prefetched_inline
        elif variant == "switch":  # the GIL handed between threads every 0.1 ms instead of 5
            sys.setswitchinterval(1e-4)
        work = Path(tempfile.mkdtemp(prefix="engine-", dir=data))
        train_recipe, val_recipe = gpu_data.imagenet_recipes(cfg["size"])
        train_dir = gpu_data.image_directory(work / "train", data / "train", train_recipe, "training")
        val_dir = gpu_data.image_directory(work / "val", data / "val", val_recipe, "inference")
        model = gpu_data.untrained(work / "model", cfg["model"])
        if decode != "auto":  # the module passes no --decode (a user gets "auto"): the choice is made here instead
            loading.decode_on_device = lambda requested, device, workers, *image_dirs: decode == "device"
        params = {"epochs": cfg["epochs"], "batch_size": cfg["batch"], "learning_rate": 0.1, "warmup_step_number": 0,
                  "print_frequency": 0, "patience": cfg["epochs"]}
        out, _ = gpu_data.train_node(work / "train_node", params, model, train_dir, val_dir)
        history = _history(out["trained_model"].path)
        rates = [h["training_images_per_second"] for h in history]
        device_line = next((line for line in gpu_data.log_text(work / "train_node").splitlines()
                            if line.startswith("rank 0:")), "")
        return {"img_s": max(rates[1:] or rates), "epochs": rates, "peak_gib": _peak(), "note": device_line}
    return run


def _history(model_dir: Path) -> list[dict]:
    import yaml

    return yaml.safe_load((model_dir / "model.yaml").read_text())["history"]


def plain_side(bf16: bool):
    def run(cfg, data: Path) -> dict:
        """The loop of torchvision's reference, written by hand: ImageFolder-style dataset decoded
        by Pillow in loader processes, pinned memory, non-blocking copies, SGD."""
        import torch
        import torchvision
        from torchvision.transforms import v2

        device = torch.device(cfg["device"])
        torch.backends.cudnn.benchmark = True
        tf = v2.Compose([v2.RandomResizedCrop(cfg["size"], antialias=True), v2.RandomHorizontalFlip(),
                         v2.PILToTensor(), v2.ToDtype(torch.float32, scale=True),
                         v2.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
        dataset = torchvision.datasets.ImageFolder(str(data / "train"), transform=tf)
        loader = torch.utils.data.DataLoader(dataset, batch_size=cfg["batch"], shuffle=True, drop_last=True,
                                             num_workers=cfg["workers"], pin_memory=device.type == "cuda",
                                             persistent_workers=True)
        model = torchvision.models.get_model(cfg["model"], num_classes=len(dataset.classes)).to(device)
        fmt = torch.channels_last if bf16 and device.type == "cuda" else torch.contiguous_format
        model = model.to(memory_format=fmt)
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
        crit = torch.nn.CrossEntropyLoss()
        rates = []
        for _ in range(cfg["epochs"]):
            seen, t = 0, time.perf_counter()
            for images, targets in loader:
                images = images.to(device, non_blocking=True, memory_format=fmt)
                targets = targets.to(device, non_blocking=True)
                with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
                    loss = crit(model(images), targets)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                seen += images.shape[0]
            if device.type == "cuda":
                torch.cuda.synchronize()
            rates.append(seen / (time.perf_counter() - t))
        return {"img_s": max(rates[1:] or rates), "epochs": rates, "peak_gib": _peak()}
    return run


def synthetic(cfg, data: Path) -> dict:
    """The GPU alone: one batch already on it, bf16 + channels_last, timed with CUDA events."""
    import torch
    import torchvision

    torch.backends.cudnn.benchmark = True
    device = torch.device("cuda")
    model = torchvision.models.get_model(cfg["model"], num_classes=10).to(device, memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    crit = torch.nn.CrossEntropyLoss()
    images = torch.randn(cfg["batch"], 3, cfg["size"], cfg["size"], device=device).contiguous(
        memory_format=torch.channels_last)
    targets = torch.randint(0, 10, (cfg["batch"],), device=device)

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = crit(model(images), targets)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    for _ in range(15):
        step()
    times = []
    for _ in range(5):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(20):
            step()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1000 / 20)
    times.sort()
    return {"img_s": cfg["batch"] / times[len(times) // 2], "peak_gib": _peak()}


def child(side: str):
    """The function of a side; `side@N` runs it on the machine's first N cores."""
    kind, _, cores = side.partition("@")
    if cores:
        os.sched_setaffinity(0, range(int(cores)))
    return CHILDREN[kind]


CHILDREN = {"engine": engine_side("auto"), "engine_host": engine_side("host"), "engine_device": engine_side("device"),
            "engine_per_image": engine_side("host", batch_crops=False),
            "engine_inline": engine_side("auto", variant="inline"), "engine_switch": engine_side("auto", variant="switch"),
            "plain_fp32": plain_side(False), "plain_bf16": plain_side(True), "synthetic": synthetic}

if __name__ == "__main__":
    sys.exit(main())
