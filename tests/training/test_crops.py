"""A recipe's geometry done a batch at a time on the GPU (training/crops.py), checked on the CPU:
roi_align runs there too, so the batch a GPU would train on is compared here with the images the
recipe's own steps give, image by image, with the same random draws."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from torchvision.transforms import v2

from bench import gpu_data
from sdk.formats import transformation as T
from sdk.formats.image_directory import read_path
from tests.modules.model_helpers import one_thread  # noqa: F401 - a fixture
from training import crops, loading
from training.data import IMAGENET_NORMALIZE, ImageDirDataset
from training.transforms import build_transform

pytestmark = pytest.mark.usefixtures("one_thread")
CUDA = torch.device("cuda")  # only compared, never used: the split needs no GPU


@pytest.fixture(scope="module")
def photos(tmp_path_factory):
    """24 photo-like JPEGs, half 320 x 256 and half 180 x 240 (a batch pads them to one size)."""
    root = tmp_path_factory.mktemp("photos")
    gpu_data.make_jpegs(root / "wide", 12, classes=3, size=(320, 256), seed=1)
    gpu_data.make_jpegs(root / "tall", 12, classes=3, size=(180, 240), seed=2)
    return sorted(root.rglob("*.jpg"))


def _steps(*steps):
    return [v2.ToImage(), v2.RGB(), *steps]


RECIPES = {
    "random resized crop, flip (ImageNet training)": _steps(v2.RandomResizedCrop(160), v2.RandomHorizontalFlip()),
    "resize, centre crop (ImageNet validation)": _steps(v2.Resize(180), v2.CenterCrop(160)),
    "resize, random crop, both flips": _steps(v2.Resize(170), v2.RandomCrop(150), v2.RandomHorizontalFlip(),
                                              v2.RandomVerticalFlip()),
    "resize, random resized crop (two resizes in one)": _steps(v2.Resize(200), v2.RandomResizedCrop(128),
                                                               v2.RandomHorizontalFlip(p=1.0)),
}


def _both(steps, files):
    """(the batch the GPU would make, the recipe's own images) with the same draws per image."""
    plan = crops.CropPlan.of(steps)
    assert plan is not None
    host, items = [], []
    for k, path in enumerate(files):
        image = crops.decode(path)
        torch.manual_seed(k)
        items.append(plan(image))
        torch.manual_seed(k)
        host.append(v2.Compose(steps)(image).as_subclass(torch.Tensor))
    return crops.BatchCrop(plan, lambda x: x)(crops.CropPlan.collate(items)), torch.stack(host)


@pytest.mark.parametrize("name", RECIPES)
def test_a_batch_cropped_at_once_gives_the_recipes_images_within_a_few_grey_levels(name, photos):
    """Same boxes and flips as the recipe draws; only the resamplers differ (one antialiased
    resize of the box against Resize then crop). Measured: mean 0.1-0.3 grey levels, max 7-17."""
    batch, host = _both(RECIPES[name], photos)
    assert batch.dtype == torch.uint8 and batch.shape == host.shape
    diff = (batch.float() - host.float()).abs()
    assert diff.mean() < 0.75 and diff.max() < 40, (float(diff.mean()), float(diff.max()))


def test_a_drawn_flip_mirrors_the_images_own_crop(photos):
    base = _steps(v2.Resize(200), v2.RandomResizedCrop(128))
    plain = _both(base, photos)[0]
    flipped = _both([*base, v2.RandomHorizontalFlip(p=1.0), v2.RandomVerticalFlip(p=1.0)], photos)[0]
    assert torch.equal(flipped, plain.flip(-1).flip(-2)) and not torch.equal(flipped, plain)


def test_an_image_the_box_cannot_do_gets_the_recipes_own_steps(photos):
    """A centre crop larger than the image pads it (the recipe's way); an image of more than 4x
    the output's pixels is transformed in the loading process, not sent whole."""
    for steps in (_steps(v2.CenterCrop(300)), _steps(v2.RandomResizedCrop(64)), _steps(v2.CenterCrop(200))):
        batch, host = _both(steps, photos)  # the last: the wide photos by their box, the tall ones padded
        assert torch.equal(batch, host)


@pytest.mark.parametrize("steps", [
    _steps(v2.Resize(64)),  # the shorter side: images of many sizes, no batch
    _steps(v2.Resize(64), v2.CenterCrop(56), v2.ColorJitter(0.4)),
    _steps(v2.RandomRotation(10), v2.CenterCrop(56)),
    _steps(v2.Resize(64, interpolation=v2.InterpolationMode.NEAREST), v2.CenterCrop(56)),
    _steps(v2.RandomHorizontalFlip(), v2.CenterCrop(56)),  # a flip before a crop moves the box
    _steps(v2.Pad(4), v2.CenterCrop(56)),
])
def test_recipes_that_are_not_geometry_then_flips_stay_image_by_image(steps):
    transform = v2.Compose([*steps, v2.ToDtype(torch.float32, scale=True)])
    assert crops.CropPlan.of(steps) is None
    per_image, per_batch = loading.split_for_device(transform, CUDA)
    assert not isinstance(per_image, crops.CropPlan) and not isinstance(per_batch, crops.BatchCrop)


def test_a_loader_of_loading_processes_sends_padded_batches_the_device_crops(tmp_path, photos):
    """Two loading processes decode and draw, their batches padded in shared memory; the device
    part (on the CPU here) makes the normalised batch the host path makes, and the log says so."""
    folder = photos[0].parent.parent.parent
    recipe = T.make_recipe([T.step("resize", size=180), T.step("center_crop", size=160)])
    image_dir = read_path(gpu_data.image_directory(tmp_path / "val", folder, recipe, "inference").path)
    transform = build_transform(image_dir.transforms, "inference", IMAGENET_NORMALIZE)
    data = loading.dataset(image_dir, image_dir.classes, transform, False, CUDA)
    assert loading.crops_on_device(data) and "cropped and resized on the GPU" in loading.describe(data, CUDA)
    args = SimpleNamespace(workers=2, batch_size=8)
    loader = loading.loader(data, args, torch.device("cpu"), sampler=None)
    batches = list(loading.device_batches(loader, torch.device("cpu")))
    assert [len(images) for images, _ in batches] == [8, 8, 8]
    host = torch.stack([x for x, _ in ImageDirDataset(image_dir, image_dir.classes, transform)])
    got = torch.cat([images for images, _ in batches])
    assert got.dtype == torch.float32 and got.shape == host.shape == (24, 3, 160, 160)
    std = torch.tensor(IMAGENET_NORMALIZE[1]).view(1, 3, 1, 1)
    diff = 255 * (got - host).abs() * std
    assert diff.mean() < 0.75 and diff.max() < 40, (float(diff.mean()), float(diff.max()))
    on_cpus = loading.dataset(image_dir, image_dir.classes, transform, False, torch.device("cpu"))
    assert not loading.crops_on_device(on_cpus) and loading.describe(on_cpus, torch.device("cpu")) == \
        "images decoded by Pillow"


def test_images_torchvision_cannot_decode_are_read_by_pillow(tmp_path):
    from PIL import Image

    Image.new("RGB", (20, 10), (200, 30, 40)).save(tmp_path / "a.bmp")
    Image.new("L", (8, 6), 90).save(tmp_path / "b.png")
    bmp, grey = crops.decode(tmp_path / "a.bmp"), crops.decode(tmp_path / "b.png")
    assert bmp.shape == (3, 10, 20) and bmp[:, 0, 0].tolist() == [200, 30, 40]
    assert grey.shape == (3, 6, 8) and grey.dtype == torch.uint8 and int(grey[1, 2, 3]) == 90


def test_jpegs_decoded_by_the_device_path_are_cropped_a_batch_at_a_time_too(tmp_path, photos):
    """--decode device (nvJPEG on a GPU, torchvision's decoder here): the decoded images get their
    boxes where they were decoded, and one BatchCrop, not the recipe image by image."""
    folder = photos[0].parent.parent.parent
    recipe = T.make_recipe([T.step("resize", size=180), T.step("center_crop", size=160)])
    image_dir = read_path(gpu_data.image_directory(tmp_path / "val", folder, recipe, "inference").path)
    transform = build_transform(image_dir.transforms, "inference", IMAGENET_NORMALIZE)
    data = loading.dataset(image_dir, image_dir.classes, transform, True, CUDA)
    assert isinstance(data, loading.EncodedImageDataset) and loading.crops_on_device(data)
    assert loading.describe(data, CUDA) == "JPEG decoded on the GPU (nvJPEG), cropped and resized on the GPU a batch at a time"
    batch = loading.decode_batch([data[i][0] for i in range(len(data))], data.transform, torch.device("cpu"))
    got = data.device_transform(batch)
    host = torch.stack([x for x, _ in ImageDirDataset(image_dir, image_dir.classes, transform)])
    std = torch.tensor(IMAGENET_NORMALIZE[1]).view(1, 3, 1, 1)
    diff = 255 * (got - host).abs() * std
    assert got.shape == host.shape and diff.mean() < 0.75 and diff.max() < 40, (float(diff.mean()), float(diff.max()))
