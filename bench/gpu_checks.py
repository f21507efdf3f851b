"""What must hold on a machine with a GPU (issue 26), as plain functions of a scratch folder, so
that they run with or without pytest (a GPU machine may have torch and nothing else):

    python bench/gpu_checks.py               # every check, a line each; exit status 1 if one fails
    python bench/gpu_checks.py cropped       # the checks whose names hold a word
    pytest -m gpu tests/training/test_gpu.py # the same checks as tests (skipped without CUDA)

Needs torch, torchvision, Pillow, numpy, PyYAML (onnx + onnxruntime for the export check).
"""
from __future__ import annotations

import json
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import gpu_data  # noqa: E402

PARAMS = {"epochs": 2, "batch_size": 32, "learning_rate": 0.05, "print_frequency": 2, "patience": 2}


def _inputs(folder: Path, images: int = 160, size: int = 64, val_images: int = 64):
    train_recipe, val_recipe = gpu_data.imagenet_recipes(size)
    gpu_data.make_jpegs(folder / "jpeg_train", images, seed=1, size=(96, 80))
    gpu_data.make_jpegs(folder / "jpeg_val", val_images, seed=2, size=(96, 80))
    return (gpu_data.untrained(folder / "model", "resnet18"),
            gpu_data.image_directory(folder / "train", folder / "jpeg_train", train_recipe, "training"),
            gpu_data.image_directory(folder / "val", folder / "jpeg_val", val_recipe, "inference"))


def check_1x1_trains_on_the_gpu_in_bf16(folder: Path) -> str:
    import torch
    import yaml

    model, train, val = _inputs(folder)
    out, _ = gpu_data.train_node(folder / "node", PARAMS, model, train, val)
    log = gpu_data.log_text(folder / "node")
    name = torch.cuda.get_device_name(0)
    assert "rank 0: GPU 0" in log and name in log, log
    expected = "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    assert f"mixed precision {expected}" in log, log
    from training import devices, loading

    many_cores = devices.loader_workers(-1, torch.device("cuda")) >= loading.DEVICE_DECODE_BELOW
    assert ("images decoded by torchvision" if many_cores else "JPEG decoded on the GPU (nvJPEG)") in log, log
    assert "cropped and resized on the GPU a batch at a time" in log, log  # the ImageNet recipe: geometry, flip
    recorded = json.loads((folder / "node" / "devices" / "rank-0.json").read_text())
    assert recorded["device"] == "cuda" and recorded["gpu"] == name, recorded
    state = torch.load(out["trained_model"].path / "model.pt", map_location="cpu", weights_only=True) \
        if (out["trained_model"].path / "model.pt").exists() else None
    info = yaml.safe_load((out["trained_model"].path / "model.yaml").read_text())
    assert all(h["training_loss"] == h["training_loss"] for h in info["history"]), info["history"]  # no NaN
    if state is not None:
        assert all(v.dtype in (torch.float32, torch.int64) and v.is_contiguous() for v in state.values())
    return f"{name}: {expected}, {info['history'][-1]['training_images_per_second']:.0f} img/s on 64 px"


def check_fp16_with_a_gradient_scaler_trains(folder: Path) -> str:
    model, train, val = _inputs(folder)
    out, _ = gpu_data.train_node(folder / "node", {**PARAMS, "mixed_precision": "fp16"}, model, train, val)
    log = gpu_data.log_text(folder / "node")
    assert "mixed precision fp16" in log, log
    import yaml

    info = yaml.safe_load((out["trained_model"].path / "model.yaml").read_text())
    assert info["validation_loss"] == info["validation_loss"], info
    return f"validation loss {info['validation_loss']:.3f}"


def check_the_gpu_decode_matches_pillow(folder: Path) -> str:
    import torch

    from sdk.formats.image_directory import read_path
    from training import loading
    from training.data import IMAGENET_NORMALIZE, ImageDirDataset
    from training.transforms import build_transform

    _, _, val = _inputs(folder)
    image_dir = read_path(val.path)
    transform = build_transform(image_dir.transforms, "inference", IMAGENET_NORMALIZE)
    host = torch.stack([x for x, _ in ImageDirDataset(image_dir, image_dir.classes, transform)])
    encoded = loading.EncodedImageDataset(image_dir, image_dir.classes, transform)
    gpu = loading.decode_batch([encoded[i][0] for i in range(len(encoded))], transform, torch.device("cuda"))
    std = torch.tensor(IMAGENET_NORMALIZE[1]).view(1, 3, 1, 1)
    diff = 255 * (gpu.cpu() - host).abs() * std
    # nvJPEG's IDCT and chroma upsampling differ from libjpeg-turbo's: about a grey level on average,
    # tens at the sharp colour edges of the generated scenes (an H100, 2026-11-27: mean 1.13, max 42)
    p999 = float(diff.flatten().kthvalue(int(diff.numel() * 0.999)).values)
    figures = f"mean difference {float(diff.mean()):.2f} grey levels, 99.9th percentile {p999:.1f}, max {float(diff.max()):.1f}"
    assert diff.mean() < 1.5 and diff.max() < 64, figures
    return figures


def check_a_batch_cropped_on_the_gpu_gives_the_recipes_images(folder: Path) -> str:
    """training/crops.py on the GPU: the ImageNet training recipe's boxes and flips, resized for the
    whole batch by roi_align there, against the recipe's own steps image by image (same draws)."""
    import torch
    from torchvision.transforms import v2

    from training import crops

    gpu_data.make_jpegs(folder / "jpeg", 128, seed=3)
    steps = [v2.ToImage(), v2.RGB(), v2.RandomResizedCrop(224), v2.RandomHorizontalFlip()]
    plan = crops.CropPlan.of(steps)
    host, items = [], []
    for k, path in enumerate(sorted((folder / "jpeg").rglob("*.jpg"))):
        image = crops.decode(path)
        torch.manual_seed(k)
        items.append(plan(image))
        torch.manual_seed(k)
        host.append(v2.Compose(steps)(image).as_subclass(torch.Tensor))
    images, rows = crops.CropPlan.collate(items)
    batch = (images.cuda(), rows.cuda())
    crop = crops.BatchCrop(plan, lambda x: x)
    crop(batch)
    torch.cuda.synchronize()
    started = time.perf_counter()
    for _ in range(20):
        out = crop(batch)
    torch.cuda.synchronize()
    took = (time.perf_counter() - started) / 20
    diff = (out.cpu().float() - torch.stack(host).float()).abs()
    figures = (f"mean difference {float(diff.mean()):.2f} grey levels, max {float(diff.max()):.0f}; "
               f"{took * 1000:.2f} ms a batch of 128 on the GPU")
    assert diff.mean() < 0.75 and diff.max() < 40, figures
    return figures


def check_the_device_decode_path_trains_on_the_gpu(folder: Path) -> str:
    """--decode device (the path 'auto' takes on a GPU fed by few cores): nvJPEG, then the recipe."""
    import torch

    from training import train

    model, train_dir, val_dir = _inputs(folder)
    args = train.get_args_parser().parse_args([
        "--model-dir", str(model.path), "--train-dir", str(train_dir.path), "--val-dir", str(val_dir.path),
        "--output-dir", str(folder / "out"), "--epochs", "2", "--batch-size", "32", "--lr", "0.05", "--device", "cuda",
        "--decode", "device", "--print-freq", "0", "--devices-dir", str(folder / "devices")])
    info = train.main(args)
    text = json.loads((folder / "devices" / "rank-0.json").read_text())["text"]
    assert "JPEG decoded on the GPU (nvJPEG)" in text and info["epochs_run"] == 2, (text, info)
    assert torch.isfinite(torch.tensor(info["validation_loss"])), info
    return text[:160]


def check_out_of_memory_names_the_batch_size(folder: Path) -> str:
    from sdk.errors import ModuleError
    from sdk.formats import transformation as T

    _, train, val = _inputs(folder, images=256, val_images=32)
    big = T.make_recipe([T.step("resize", size=1536)])  # 256 images of 1536 px: far past any GPU's memory
    train = gpu_data.image_directory(folder / "big_train", folder / "jpeg_train", big, "training")
    val = gpu_data.image_directory(folder / "big_val", folder / "jpeg_val", big, "inference")
    model = gpu_data.untrained(folder / "big_model", "resnet50")
    try:
        gpu_data.train_node(folder / "node", {**PARAMS, "batch_size": 256, "mixed_precision": "off"}, model, train, val)
    except ModuleError as e:
        text = str(e)
        assert "ran out of memory at Batch size 256" in text and "lower Batch size" in text, text
        return text[:160]
    raise AssertionError("a batch of 256 images of 1536 px trained without running out of memory")


def check_score_image_model_runs_on_the_gpu(folder: Path) -> str:
    from designer.engine import executor
    from modules.score_image_model import ScoreImageModel
    from sdk.formats.meta import artifact

    model, train, val = _inputs(folder)
    out, _ = gpu_data.train_node(folder / "node", {**PARAMS, "epochs": 1}, model, train, val)
    events: list = []
    executor.execute(ScoreImageModel, {"id": "score", "kind": ScoreImageModel.kind, "parameters": {}},
                     {"trained_model": out["trained_model"], "dataset": artifact(val.path)}, folder / "score",
                     events.append)
    log = gpu_data.log_text(folder / "score")
    assert "scoring on GPU 0" in log, log
    return log.splitlines()[1] if len(log.splitlines()) > 1 else log


def check_a_bf16_trained_model_exports_to_onnx(folder: Path) -> str:
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        return "SKIPPED: onnxruntime is not installed here"
    from designer.engine import executor
    from modules.export_to_onnx import ExportToOnnx

    model, train, val = _inputs(folder)
    out, _ = gpu_data.train_node(folder / "node", {**PARAMS, "epochs": 1}, model, train, val)
    events: list = []
    executor.execute(ExportToOnnx, {"id": "export", "kind": ExportToOnnx.kind, "parameters": {}},
                     {"trained_model": out["trained_model"]}, folder / "export", events.append)
    return gpu_data.log_text(folder / "export").splitlines()[-2]  # the last line is "finished in"


def check_two_processes_use_two_gpus_over_nccl(folder: Path) -> str:
    import os
    import subprocess

    import torch

    if torch.cuda.device_count() < 2:
        return "SKIPPED: one GPU on this machine"
    model, train, val = _inputs(folder)
    out_dir = folder / "out"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", "-m", "training.train",
           "--model-dir", str(model.path), "--train-dir", str(train.path), "--val-dir", str(val.path),
           "--output-dir", str(out_dir), "--epochs", "1", "--batch-size", "16", "--device", "cuda",
           "--devices-dir", str(folder / "devices")]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
                          timeout=600, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    ranks = [json.loads((folder / "devices" / f"rank-{r}.json").read_text()) for r in (0, 1)]
    assert [r["text"].split(":")[1].strip() for r in ranks] == ["GPU 0", "GPU 1"], ranks
    return "; ".join(r["text"][:80] for r in ranks)


CHECKS = [v for k, v in dict(globals()).items() if k.startswith("check_")]


def main() -> int:
    failed = 0
    chosen = [c for c in CHECKS if not sys.argv[1:] or any(name in c.__name__ for name in sys.argv[1:])]
    for check in chosen:
        started = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="gpu-check-") as tmp:
            try:
                result, status = check(Path(tmp)), "ok"
            except Exception:
                result, status = traceback.format_exc(limit=6)[-2500:], "FAILED"
                failed += 1
        print(f"{status:6s} {check.__name__[6:]} ({time.perf_counter() - started:.0f} s): {result}", flush=True)
    print(f"{len(chosen) - failed} of {len(chosen)} GPU checks passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
