"""Train PyTorch Model on the hardware the worker has (issue 26), as far as a CPU machine shows it:
the device picked from the machine, mixed precision (bf16 autocast runs on CPUs), data-loading
processes, JPEGs decoded by the device path, the device said in the log and kept for the node
pane, and clear errors for a GPU's out-of-memory and CUDA failures. tests/training/test_gpu.py
runs the same on a GPU (marker `gpu`)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from modules.export_to_onnx import ExportToOnnx
from modules.train_pytorch_model import TrainPyTorchModel
from sdk.errors import ModuleError, NotInRangeValueError
from sdk.formats.image_directory import read_path
from sdk.layout import DEVICES_DIR
from tests.modules.model_helpers import (  # noqa: F401 - one_thread is a fixture
    digits_split,
    image_dir,
    node_log,
    one_thread,
    run,
    small_recipe,
    untrained,
)
from training import devices, loading
from training.data import IMAGENET_NORMALIZE, ImageDirDataset
from training.transforms import build_transform

pytestmark = pytest.mark.usefixtures("one_thread")
FAST = {"epochs": 2, "batch_size": 16, "learning_rate": 0.05, "print_frequency": 2}


@pytest.fixture(scope="module")
def digits(tmp_path_factory):
    """60 training and 20 validation digits (10 classes, 32x32 PNG)."""
    return digits_split(tmp_path_factory.mktemp("digits"), per_class=8)


@pytest.fixture(scope="module")
def jpeg_digits(tmp_path_factory, digits):
    """The same digits as RGB JPEGs (what Convert to Image Directory keeps of a photo archive)."""
    root = tmp_path_factory.mktemp("jpeg")
    trees = []
    for tree in digits:
        out = root / tree.name
        for png in sorted(tree.rglob("*.png")):
            target = out / png.parent.name / (png.stem + ".jpg")
            target.parent.mkdir(parents=True, exist_ok=True)
            Image.open(png).convert("RGB").resize((40, 40)).save(target, "JPEG", quality=90)
        trees.append(out)
    return trees


def _jpeg_image_dir(path: Path, folder: Path, recipe: dict, mode: str):
    """image_dir() over the JPEG tree (it lists *.png): the same index written by hand."""
    art = image_dir(path, folder, recipe, mode)
    rows = sorted((str(p), p.parent.name) for p in Path(folder).rglob("*.jpg"))
    (path / "index.csv").write_text("path,label\n" + "".join(f"{p},{label}\n" for p, label in rows))
    meta = (path / "_meta.yaml").read_text().replace("count: 0", f"count: {len(rows)}")
    (path / "_meta.yaml").write_text(meta)
    return art


@pytest.fixture
def inputs(tmp_path, digits):
    train, val = digits
    return {"untrained_model": untrained(tmp_path / "resnet"),
            "training_dataset": image_dir(tmp_path / "train", train, small_recipe(flip=True), "training"),
            "validation_dataset": image_dir(tmp_path / "val", val, small_recipe(), "inference")}


# --------------------------------------------------------------------------- choosing


def test_on_a_machine_without_a_gpu_auto_is_the_cpu_with_full_precision():
    device = devices.choose("auto", local_rank=0)
    assert device.type == "cpu"
    assert devices.precision("auto", device) == "off"
    assert devices.memory_format(device) == torch.contiguous_format
    assert "core(s)" in devices.describe(device)


def test_a_gpu_asked_for_where_cuda_cannot_start_is_refused_saying_why():
    with pytest.raises(devices.NoGPUError, match="a GPU was asked for, but CUDA cannot use one"):
        devices.choose("cuda")


def test_fp16_on_cpus_is_refused_naming_what_works_there():
    with pytest.raises(NotInRangeValueError, match="fp16 needs a GPU; on CPUs choose bf16 or off"):
        devices.precision("fp16", torch.device("cpu"))
    assert devices.precision("bf16", torch.device("cpu")) == "bf16"


def test_loader_processes_follow_the_cores_on_a_gpu_and_none_on_cpus(monkeypatch):
    monkeypatch.setattr(devices, "cores", lambda: 16)
    gpu = torch.device("cuda", 0)  # only its type is looked at
    assert devices.loader_workers(-1, gpu, local_world_size=1) == 15
    assert devices.loader_workers(-1, gpu, local_world_size=2) == 7
    monkeypatch.setattr(devices, "cores", lambda: 64)
    assert devices.loader_workers(-1, gpu, local_world_size=1) == devices.MAX_LOADER_WORKERS
    assert devices.loader_workers(-1, torch.device("cpu")) == 0
    assert devices.loader_workers(3, torch.device("cpu")) == 3


# --------------------------------------------------------------------------- training


def test_the_driver_log_and_the_node_pane_say_which_device_trained(tmp_path, inputs):
    out, events = run(TrainPyTorchModel, tmp_path / "n", {**FAST, "epochs": 1}, **inputs)
    logs = node_log(tmp_path / "n")
    assert "rank 0: CPU: " in logs and "mixed precision off" in logs and "images decoded by Pillow" in logs
    recorded = json.loads((tmp_path / "n" / DEVICES_DIR / "rank-0.json").read_text())
    assert recorded["device"] == "cpu" and recorded["rank"] == 0 and "CPU" in recorded["text"]


def test_bf16_mixed_precision_trains_on_cpus_and_exports_to_onnx_within_tolerance(tmp_path, inputs):
    import onnxruntime

    from sdk.formats import onnx_model as onnx_format
    from training import models

    out, events = run(TrainPyTorchModel, tmp_path / "n", {**FAST, "mixed_precision": "bf16"}, **inputs)
    logs = node_log(tmp_path / "n")
    assert "mixed precision bf16" in logs
    model, info = models.load_trained(out["trained_model"], "test")
    assert all(p.dtype == torch.float32 for p in model.parameters())  # autocast: the weights stay float32
    assert np.isfinite(info["validation_loss"])
    exported, _ = run(ExportToOnnx, tmp_path / "x", trained_model=out["trained_model"])
    transform = build_transform(small_recipe(), "inference", IMAGENET_NORMALIZE)
    val = read_path(inputs["validation_dataset"].path)
    images = torch.stack([x for x, _ in ImageDirDataset(val, info["classes"], transform)])
    session = onnxruntime.InferenceSession(str(exported["onnx_model"].path / onnx_format.ONNX_FILE),
                                           providers=["CPUExecutionProvider"])
    with torch.inference_mode():
        expected = model(images).numpy()
    got = session.run(None, {"image": images.numpy()})[0]
    # float32 logits (hundreds, from a few bf16 steps) agree to float32's relative precision, the
    # class probabilities within the scoring tests' tolerance (an absolute 1e-4 on logits of 700
    # failed once: 4e-4 apart, 6e-7 of their size)
    assert np.allclose(got, expected, rtol=1e-5, atol=1e-4), np.abs(got - expected).max()
    assert np.allclose(torch.softmax(torch.from_numpy(got), 1), torch.softmax(torch.from_numpy(expected), 1), atol=1e-5, rtol=0)


def test_loader_processes_train_the_same_recipe(tmp_path, digits):
    """--workers 2: the images are decoded in two loader processes, and the training completes
    with the figures of a working model (the augmentations' random draws differ by process)."""
    from training import train

    train_dir, val_dir = digits
    recipe = small_recipe(flip=True)
    args = train.get_args_parser().parse_args([
        "--model-dir", str(untrained(tmp_path / "resnet").path),
        "--train-dir", str(image_dir(tmp_path / "t", train_dir, recipe).path),
        "--val-dir", str(image_dir(tmp_path / "v", val_dir, small_recipe(), "inference").path),
        "--output-dir", str(tmp_path / "out"), "--epochs", "2", "--batch-size", "16", "--lr", "0.05",
        "--workers", "2", "--print-freq", "0"])
    lines = []

    class Collect(train.Reporter):
        def log(self, text):
            lines.append(text)

        log_own = log

    info = train.main(args, Collect())
    assert any("2 data-loading process(es)" in line for line in lines)
    assert info["epochs_run"] == 2 and np.isfinite(info["validation_loss"])


def _train_in_a_pool_process(argv: list[str]) -> dict:
    from training import train

    return train.main(train.get_args_parser().parse_args(argv))


def test_loader_processes_start_inside_a_celery_pool_process(tmp_path, digits):
    """A worker runs a 1 x 1 training in its pool process (billiard's, a daemon): multiprocessing
    refuses a daemon children, and a GPU's training (loading processes by default) failed there."""
    import billiard

    train_dir, val_dir = digits
    argv = ["--model-dir", str(untrained(tmp_path / "resnet").path),
            "--train-dir", str(image_dir(tmp_path / "t", train_dir, small_recipe(flip=True)).path),
            "--val-dir", str(image_dir(tmp_path / "v", val_dir, small_recipe(), "inference").path),
            "--output-dir", str(tmp_path / "out"), "--epochs", "1", "--batch-size", "16", "--workers", "2",
            "--threads", "1", "--print-freq", "0"]
    with billiard.Pool(1) as pool:
        info = pool.apply(_train_in_a_pool_process, (argv,))
    assert info["epochs_run"] == 1 and np.isfinite(info["validation_loss"])


def test_jpegs_decoded_by_the_device_path_match_pillow_within_a_grey_level(tmp_path, jpeg_digits):
    """The device path (torchvision.io.decode_jpeg, then the recipe on tensors) gives the images
    the host path (Pillow, then the recipe) gives, for the recorded inference transformation."""
    val = _jpeg_image_dir(tmp_path / "v", jpeg_digits[1], small_recipe(), "inference")
    image_dir_ = read_path(val.path)
    classes = image_dir_.classes
    transform = build_transform(image_dir_.transforms, "inference", IMAGENET_NORMALIZE)
    host = torch.stack([x for x, _ in ImageDirDataset(image_dir_, classes, transform)])
    encoded = loading.EncodedImageDataset(image_dir_, classes, transform)
    device = loading.decode_batch([encoded[i][0] for i in range(len(encoded))], transform, torch.device("cpu"))
    assert device.shape == host.shape == (20, 3, 32, 32)
    std = torch.tensor(IMAGENET_NORMALIZE[1]).view(1, 3, 1, 1)
    assert ((device - host).abs() * std).max() < 2.5 / 255  # resizing a tensor and a Pillow image round differently


def test_a_training_on_jpegs_decoded_by_the_device_path_learns(tmp_path, jpeg_digits):
    from training import train

    recipe = small_recipe(flip=True)
    args = train.get_args_parser().parse_args([
        "--model-dir", str(untrained(tmp_path / "resnet").path),
        "--train-dir", str(_jpeg_image_dir(tmp_path / "t", jpeg_digits[0], recipe, "training").path),
        "--val-dir", str(_jpeg_image_dir(tmp_path / "v", jpeg_digits[1], small_recipe(), "inference").path),
        "--output-dir", str(tmp_path / "out"), "--epochs", "2", "--batch-size", "16", "--lr", "0.05",
        "--decode", "device", "--print-freq", "0", "--devices-dir", str(tmp_path / "devices")])
    info = train.main(args)
    assert info["epochs_run"] == 2 and np.isfinite(info["validation_loss"])
    assert "JPEG decoded by torchvision" in json.loads((tmp_path / "devices" / "rank-0.json").read_text())["text"]


def test_decoding_on_the_device_is_refused_for_images_that_are_not_jpegs(tmp_path, digits):
    train_dir = read_path(image_dir(tmp_path / "t", digits[0], small_recipe()).path)
    with pytest.raises(NotInRangeValueError, match="only when every image is a JPEG"):
        loading.decode_on_device("device", torch.device("cpu"), 0, train_dir)
    assert not loading.decode_on_device("auto", torch.device("cpu"), 0, train_dir)


def test_auto_decodes_jpegs_on_a_gpu_only_when_few_cores_feed_it(tmp_path, jpeg_digits):
    """On an H200, with the batches cropped on the GPU either way, 2 loading processes were already
    faster than nvJPEG (2,217 img/s against 1,860): 'auto' takes the GPU's decoder only where one
    loading process or none feeds it."""
    jpegs = read_path(_jpeg_image_dir(tmp_path / "t", jpeg_digits[0], small_recipe(), "training").path)
    gpu = torch.device("cuda")  # only compared, never used: the choice needs no GPU
    assert loading.decode_on_device("auto", gpu, 1, jpegs) and loading.decode_on_device("auto", gpu, 0, jpegs)
    assert not loading.decode_on_device("auto", gpu, 2, jpegs)
    assert not loading.decode_on_device("auto", gpu, 4, jpegs)
    assert loading.decode_on_device("device", gpu, 15, jpegs)
    assert not loading.decode_on_device("host", gpu, 2, jpegs)
    assert not loading.decode_on_device("auto", torch.device("cpu"), 2, jpegs)


def test_on_a_gpu_loading_processes_send_uint8_images_and_the_batch_is_normalised_on_the_device(tmp_path, digits):
    """A quarter of the bytes through the loader's queues and no float arithmetic in its processes;
    the batch the training sees is the one the whole recipe gives (checked here on the CPU)."""
    image_dir_ = read_path(image_dir(tmp_path / "v", digits[1], small_recipe(), "inference").path)
    transform = build_transform(image_dir_.transforms, "inference", IMAGENET_NORMALIZE)
    data = loading.dataset(image_dir_, image_dir_.classes, transform, False, torch.device("cuda"))
    assert data[0][0].dtype == torch.uint8 and data[0][0].shape == (3, 32, 32)
    loader = torch.utils.data.DataLoader(data, batch_size=20)
    (batch, _), = list(loading.device_batches(loader, torch.device("cpu")))
    whole = torch.stack([x for x, _ in ImageDirDataset(image_dir_, image_dir_.classes, transform)])
    assert batch.dtype == torch.float32 and torch.allclose(batch, whole, atol=1e-6)
    on_cpus = loading.dataset(image_dir_, image_dir_.classes, transform, False, torch.device("cpu"))
    assert on_cpus[0][0].dtype == torch.float32 and on_cpus.device_transform is None


def test_random_erasing_stays_in_the_loading_processes_drawn_per_image():
    from sdk.formats import transformation as T

    recipe = T.make_recipe([T.step("resize", size=32), T.step("random_erasing", p=1.0)])
    transform = build_transform(recipe, "training", IMAGENET_NORMALIZE)
    assert loading.split_for_device(transform, torch.device("cuda")) == (transform, None)


# --------------------------------------------------------------------------- errors of the device


def test_a_gpu_out_of_memory_names_the_batch_size_and_what_to_change(tmp_path, inputs, monkeypatch):
    """A GPU cannot exist here: the step raises what torch raises when a GPU's memory runs out."""
    from training import train

    def out_of_memory(model, images, args):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    monkeypatch.setattr(train, "_forward", out_of_memory)
    with pytest.raises(ModuleError) as e:
        run(TrainPyTorchModel, tmp_path / "n", {**FAST, "batch_size": 16}, **inputs)
    text = str(e.value)
    assert text.startswith("Train PyTorch Model: ")
    assert "ran out of memory at Batch size 16" in text and "lower Batch size" in text
    assert "Traceback" not in text


def test_a_cuda_error_names_the_rank_the_worker_and_the_device(tmp_path, inputs, monkeypatch):
    from training import train

    def cuda_failure(model, images, args):
        raise RuntimeError("CUDA error: an illegal memory access was encountered\nCUDA kernel errors ...")

    monkeypatch.setattr(train, "_forward", cuda_failure)
    monkeypatch.setenv("DESIGNER_WORKER", "gpu-worker-3")
    with pytest.raises(ModuleError, match=r"rank 0 on worker gpu-worker-3, CPU: .*CUDA error: an illegal memory "
                                          r"access was encountered$"):
        run(TrainPyTorchModel, tmp_path / "n", {**FAST, "epochs": 1}, **inputs)


def test_the_devices_recorded_by_ranks_are_read_back_small_and_in_rank_order(tmp_path, settings):
    from designer.pipelines.runs import artifacts

    settings.ARTIFACT_ROOT = str(tmp_path)
    folder = artifacts.node_dir(7, "train") / DEVICES_DIR
    for rank in (1, 0):
        devices.record(folder, rank, torch.device("cpu"), f"rank {rank}: CPU: 2 core(s)")
    (folder / "rank-9.json").write_text("x" * 10_000)  # not the training's: too big to read
    got = artifacts.devices_of(7, "train")
    assert [d["rank"] for d in got] == [0, 1] and got[0]["text"] == "rank 0: CPU: 2 core(s)"
    shutil.rmtree(folder)
    assert artifacts.devices_of(7, "train") == []
