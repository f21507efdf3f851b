"""From an ImageDirectory to batches on the training device, as fast as the device takes them.

Two ways to decode, the same recipe (training/transforms.py) either way:
- host: each image decoded by Pillow and transformed in the DataLoader's worker processes, the
  batch pinned and copied to the device (torchvision's reference);
- device: the loader's processes only read the files' bytes; the batch's JPEGs are decoded on the
  training device by torchvision.io.decode_jpeg (nvJPEG on a GPU) and transformed there. Chosen
  by `decode_on_device`: on an H200 the host path is faster from 2 loading processes on (2,217
  img/s with 2, 3,174-3,419 with 15, against about 1,800: docs/benchmarks.md, train_gpu), so
  'auto' takes the device path only for a GPU fed by one loading process or none.

Either way, on a GPU the recipe's conversion to float and its Normalize run once on the whole batch
there (`split_for_device`): the loading processes send uint8 images, a quarter of the bytes, and
skip the float arithmetic, which was 40% of their work (DALI and FFCV normalise on the GPU too):
2,564 img/s before, 2,898 after, on the same H100. Where the recipe's per-image steps are geometry
then flips, the crop, resize and flips run there too, a batch at a time (training/crops.py).

On a GPU the next batch is prepared on a side CUDA stream while the current one trains
(NVIDIA DeepLearningExamples' data prefetcher).
"""
from __future__ import annotations

import contextlib
import itertools
import multiprocessing
import queue
import threading
import warnings
from pathlib import Path

import torch
from torchvision.io import ImageReadMode, decode_jpeg
from torchvision.transforms import v2

from sdk.formats.image_directory import ImageDir
from training import crops, devices
from training.data import ImageDirDataset

JPEG_SUFFIXES = {".jpg", ".jpeg"}
# 'auto' decodes on the GPU when it has fewer loading processes than this: on an H200 (ResNet-50,
# 224 px, batches cropped on the GPU) the device path ran at about DEVICE_PATH_IMG_S whatever the
# cores (1,762 img/s on 16 cores, 1,860 on 3), the host path at about HOST_IMG_S_PER_WORKER a
# loading process while they are the limit (2,217 img/s with 2; docs/benchmarks.md)
DEVICE_PATH_IMG_S, HOST_IMG_S_PER_WORKER = 1800, 1100
DEVICE_DECODE_BELOW = -(-DEVICE_PATH_IMG_S // HOST_IMG_S_PER_WORKER)


def decode_on_device(requested: str, device: torch.device, workers: int, *image_dirs: ImageDir) -> bool:
    """Whether images are decoded on the training device: 'device' asks it (JPEG files only),
    'host' refuses it, 'auto' chooses it on a GPU fed by fewer than DEVICE_DECODE_BELOW loading
    processes (`workers`) when every image is a JPEG (Convert to Image Directory keeps RGB JPEGs as
    they are and writes everything else as PNG)."""
    if requested == "host" or (requested == "auto" and (device.type != "cuda" or workers >= DEVICE_DECODE_BELOW)):
        return False
    jpeg = all(Path(p).suffix.lower() in JPEG_SUFFIXES for d in image_dirs for p, _ in d.items)
    if requested == "device" and not jpeg:
        other = next(p for d in image_dirs for p, _ in d.items if Path(p).suffix.lower() not in JPEG_SUFFIXES)
        raise devices.NotInRangeValueError(f"images can be decoded on the device only when every image is a JPEG "
                                           f"(not {str(other)[:120]})")
    return jpeg


class EncodedImageDataset(torch.utils.data.Dataset):
    """(the file's bytes as a uint8 tensor, class index) of each image: decoded later, on the device."""

    device_transform = None  # see dataset()

    def __init__(self, image_dir: ImageDir, classes: list[str], transform):
        self.samples = ImageDirDataset(image_dir, classes, None).samples
        self.transform = transform  # applied on the device, to the decoded image

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, i):
        path, target = self.samples[i]
        return crops.file_bytes(path), target


# batches cropped and resized on the GPU where the recipe allows (training/crops.py); the bench
# turns it off to measure the loading processes doing the whole recipe
BATCH_CROPS = True


def split_for_device(transform: v2.Compose, device: torch.device):
    """(what the loading processes apply to an image, what the device applies to the batch) of a
    recipe's transform (training/transforms.build_transform): on a GPU, the conversion to float and
    what follows it (Normalize) move to the batch there, and so does the geometry where the recipe's
    per-image steps are geometry then flips (training/crops.py: a CropPlan, a BatchCrop). A recipe
    with Random erasing stays whole on the host (its rectangles are drawn per image, after the
    conversion); so does everything on CPUs."""
    steps = list(transform.transforms)
    at = next((i for i, t in enumerate(steps) if isinstance(t, v2.ToDtype)), None)
    if device.type != "cuda" or at is None or any(isinstance(t, v2.RandomErasing) for t in steps[at:]):
        return transform, None
    per_image, per_batch = v2.Compose(steps[:at]), v2.Compose(steps[at:])
    plan = crops.CropPlan.of(steps[:at]) if BATCH_CROPS else None
    return (plan, crops.BatchCrop(plan, per_batch)) if plan else (per_image, per_batch)


def dataset(image_dir: ImageDir, classes: list[str], transform, on_device: bool, device: torch.device):
    """The dataset a loader reads; on a GPU its `device_transform` finishes each batch there."""
    per_image, per_batch = split_for_device(transform, device)
    kind = EncodedImageDataset if on_device else \
        crops.DecodedImageDataset if isinstance(per_image, crops.CropPlan) else ImageDirDataset
    data = kind(image_dir, classes, per_image)
    data.device_transform = per_batch
    return data


def crops_on_device(data) -> bool:
    """Whether the device crops and resizes the batches of `data`."""
    return isinstance(data.device_transform, crops.BatchCrop)


def describe(data, device: torch.device) -> str:
    """How the images of `data` reach the device, in the words of the driver log."""
    on_device = isinstance(data, EncodedImageDataset)
    decode = "JPEG decoded on the GPU (nvJPEG)" if on_device and device.type == "cuda" else \
        "JPEG decoded by torchvision" if on_device else \
        "images decoded by torchvision" if crops_on_device(data) else "images decoded by Pillow"
    return decode + (", cropped and resized on the GPU a batch at a time" if crops_on_device(data) else "")


def _collate_encoded(batch):
    return [data for data, _ in batch], torch.tensor([target for _, target in batch])


def _collate_planned(batch):
    return crops.CropPlan.collate([item for item, _ in batch]), torch.tensor([target for _, target in batch])


class Skipping(torch.utils.data.Sampler):
    """`sampler`'s order less its first `skip` indices, which are drawn but never read (a resumed
    epoch's steps done); `then()` is called once they are passed, before the first index it yields."""

    def __init__(self, sampler, skip: int, then=lambda: None):
        self.sampler, self.skip, self.then = sampler, skip, then

    def __iter__(self):
        indices = iter(self.sampler)
        for _ in itertools.islice(indices, self.skip):
            pass
        self.then()
        yield from indices

    def __len__(self) -> int:
        return max(0, len(self.sampler) - self.skip)


def loader(data, args, device: torch.device, sampler, drop_last: bool = False,
           validation: bool = False) -> torch.utils.data.DataLoader:
    """The DataLoader of a training: args.workers processes kept for the whole training (half as
    many for validation, which runs a few seconds an epoch: each process holds its own copy of the
    dataset's index and Python), pinned memory on a GPU (the copy to the device then overlaps the step)."""
    workers = min(args.workers, max(2, args.workers // 2)) if validation else args.workers
    encoded = isinstance(data, EncodedImageDataset)
    collate = _collate_encoded if encoded else _collate_planned if crops_on_device(data) else None
    return torch.utils.data.DataLoader(
        data, batch_size=args.batch_size, sampler=sampler, num_workers=workers, drop_last=drop_last,
        pin_memory=device.type == "cuda" and not encoded, persistent_workers=workers > 0,
        prefetch_factor=4 if workers > 0 else None, collate_fn=collate)


def decode_batch(encoded: list[torch.Tensor], transform, device: torch.device):
    """The JPEGs of a batch decoded on `device` (one batched nvJPEG call on a GPU) as RGB, each
    transformed by the recipe there, stacked; with a CropPlan, each given its box, padded into one
    batch for the BatchCrop. torchvision 0.29 deprecates its decoders for TorchCodec's (not
    installed here); they still work, and are the nvJPEG route of the torchvision of GPU machines."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        images = decode_jpeg(encoded, mode=ImageReadMode.RGB, device=device)
    if isinstance(transform, crops.CropPlan):
        return crops.CropPlan.collate([transform(image) for image in images])
    return torch.stack([transform(image) for image in images])


def device_batches(data_loader, device: torch.device, args=None):
    """(images, targets) of each batch of `data_loader`, on `device`, images in the device's memory
    format. On a GPU the next batch is made ready on a side stream while the caller uses this one."""
    device = torch.device(device)
    memory_format = devices.memory_format(device)
    transform = getattr(data_loader.dataset, "transform", None)
    per_batch = getattr(data_loader.dataset, "device_transform", None)
    encoded = isinstance(data_loader.dataset, EncodedImageDataset)

    def prepare(batch):
        images, targets = batch
        if encoded:
            images = decode_batch(images, transform, device)
        images = tuple(t.to(device, non_blocking=True) for t in images) if isinstance(images, tuple) else \
            images.to(device, non_blocking=True)
        if per_batch is not None:
            images = per_batch(images)
        return images.contiguous(memory_format=memory_format), targets.to(device, non_blocking=True)

    if device.type != "cuda":
        for batch in iterate(data_loader):
            yield prepare(batch)
        return
    yield from _prefetched(data_loader, prepare, device)


def iterate(data_loader):
    """The batches of `data_loader`, its loading processes started even where this process is a
    daemon: a Celery worker's pool process (billiard) runs a 1 x 1 training in-process, and
    multiprocessing refuses children to a daemon ("daemonic processes are not allowed to have
    children"). The refusal guards against children left behind by a daemon killed at exit; a
    DataLoader's processes watch their parent and end with it (torch's ManagerWatchdog)."""
    with _children_allowed():
        batches = iter(data_loader)  # starts the loading processes (once, when they are persistent)
    yield from batches


@contextlib.contextmanager
def _children_allowed():
    # the flag the refusal reads: a private attribute of CPython's, which typeshed leaves out
    config = multiprocessing.current_process()._config  # type: ignore[attr-defined]
    daemon = config.get("daemon")
    config["daemon"] = False
    try:
        yield
    finally:
        if daemon is not None:
            config["daemon"] = daemon


_DONE = object()


def _prefetched(data_loader, prepare, device: torch.device):
    """Batches prepared by a thread on a side CUDA stream, one ahead of the caller's: the decode
    and copy of batch i + 1 overlap the training step of batch i."""
    stream = torch.cuda.Stream(device)
    ready: queue.Queue = queue.Queue(maxsize=2)
    stop = threading.Event()

    def produce():
        try:
            with torch.cuda.device(device), torch.cuda.stream(stream):
                for batch in iterate(data_loader):
                    if stop.is_set():
                        return
                    images, targets = prepare(batch)
                    event = torch.cuda.Event()
                    event.record(stream)
                    ready.put((images, targets, event))
        except BaseException as e:  # re-raised in the training loop, with its own traceback
            ready.put(e)
            return
        ready.put(_DONE)

    thread = threading.Thread(target=produce, daemon=True, name="designer-prefetch")
    thread.start()
    try:
        while True:
            item = ready.get()
            if item is _DONE:
                return
            if isinstance(item, BaseException):
                raise item
            images, targets, event = item
            current = torch.cuda.current_stream(device)
            current.wait_event(event)
            # the caching allocator must not reuse these blocks until the training stream is done with them
            images.record_stream(current)
            targets.record_stream(current)
            yield images, targets
    finally:
        stop.set()
        while thread.is_alive():  # let the producer see the stop (it may wait on a full queue)
            try:
                ready.get(timeout=0.1)
            except queue.Empty:
                pass
        thread.join()
