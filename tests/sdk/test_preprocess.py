"""sdk/preprocess.py: bytes -> the model's input with PIL + numpy only, the same numbers as the
torchvision transform training and Score use (training/transforms.build_transform)."""
import io
import subprocess
import sys
import warnings

import numpy as np
import pytest
from PIL import Image

from modules.convert_to_image_directory import to_rgb_file
from modules.init_image_transformation import InitImageTransformation
from sdk import preprocess
from sdk.formats import transformation as T
from sdk.formats.meta import artifact
from sdk.preprocess import BadImage, Preprocessor, load_image
from tests.conftest import ROOT
from tests.modules.runner import run_module
from training.data import IMAGENET_NORMALIZE
from training.transforms import build_transform

NORMALIZE = [list(IMAGENET_NORMALIZE[0]), list(IMAGENET_NORMALIZE[1])]
RECIPES = {
    "no recipe": None,
    "resize and center crop": T.make_recipe([T.step("resize", size=64), T.step("center_crop", size=56)]),
    "resize to a pair, crop larger than the image": T.make_recipe([T.step("resize", size=[30, 41]),
                                                                   T.step("center_crop", size=[48, 20])]),
    "pad then resize": T.make_recipe([T.step("pad", padding=5, fill=9), T.step("resize", size=33)]),
    "grayscale between resize and crop": T.make_recipe([T.step("resize", size=40), T.step("grayscale"),
                                                        T.step("center_crop", size=31)]),
    "random steps dropped": T.make_recipe([T.step("color_jitter"), T.step("random_resized_crop", size=20),
                                           T.step("resize", size=25), T.step("random_horizontal_flip"),
                                           T.step("random_erasing")]),
}
SIZES = [(1, 1), (7, 300), (257, 113), (64, 64), (333, 500)]  # width, height


def picture(width: int, height: int, seed: int = 0) -> Image.Image:
    """Noise over gradients: every resize weight matters, and no rounding tie hides."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width]
    base = np.stack([x * 255 // max(width - 1, 1), y * 255 // max(height - 1, 1), (x + y) % 256], axis=2)
    noise = rng.integers(-40, 40, (height, width, 3))
    return Image.fromarray(np.clip(base + noise, 0, 255).astype(np.uint8))


def encoded(img: Image.Image, fmt: str = "PNG", **kw) -> bytes:
    buf = io.BytesIO()
    img.save(buf, fmt, **kw)
    return buf.getvalue()


def torchvision(recipe, img, normalize=NORMALIZE) -> np.ndarray:
    return build_transform(recipe, T.INFERENCE, normalize).__call__(img).numpy()


@pytest.mark.parametrize("name", RECIPES)
@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_it_gives_torchvisions_numbers(name, size):
    img = picture(*size, seed=size[0])
    for normalize in (NORMALIZE, None):
        expected = torchvision(RECIPES[name], img, normalize)
        got = Preprocessor({"transforms": RECIPES[name], "normalize": normalize})(img)
        assert got.dtype == np.float32 and got.shape == expected.shape
        assert np.abs(got - expected).max() <= 1e-6


def test_the_default_recipe_of_init_image_transformation_gives_torchvisions_numbers(tmp_path):
    out = run_module(InitImageTransformation, tmp_path / "init")["image_transformation"]
    recipe = T.inference_recipe(T.read(artifact(out), "test"))
    assert [s["op"] for s in recipe["steps"]] == ["resize", "center_crop", "random_horizontal_flip"]
    for width, height in [(300, 257), (640, 480), (256, 256)]:
        img = picture(width, height)
        got = Preprocessor({"transforms": recipe, "normalize": NORMALIZE})(img)
        assert got.shape == (3, 224, 224)
        assert np.abs(got - torchvision(recipe, img)).max() <= 1e-6


def test_a_large_photo_shrinks_as_torchvision_shrinks_it():
    img = picture(1999, 1501, seed=3)
    recipe = RECIPES["resize and center crop"]
    assert np.abs(Preprocessor({"transforms": recipe})(img) - torchvision(recipe, img, None)).max() <= 1e-6


def test_grayscale_matches_torchvision_on_every_colour():
    """All 2^24 colours in one 4096 x 4096 image: the step's rounding is torch's, to the last level."""
    v = np.arange(256, dtype=np.uint8)
    r, g, b = np.meshgrid(v, v, v, indexing="ij")
    img = Image.fromarray(np.stack([r, g, b], axis=-1).reshape(4096, 4096, 3))
    recipe = T.make_recipe([T.step("grayscale")])
    got = Preprocessor({"transforms": recipe})(img)
    assert np.array_equal(got, torchvision(recipe, img, None))


@pytest.mark.parametrize("mode", ["RGBA", "LA", "L", "P", "P with transparency", "I;16", "CMYK"])
def test_other_modes_are_converted_as_training_images_were(tmp_path, mode):
    """load_image gives what Convert to Image Directory stored for training; Preprocessor on it is
    torchvision on that stored file."""
    rgb = picture(45, 31, seed=5)
    if mode == "P with transparency":
        img = rgb.convert("P", palette=Image.Palette.ADAPTIVE)
        img.info["transparency"] = 3
    elif mode == "I;16":
        img = Image.fromarray((np.asarray(rgb.convert("L"), dtype=np.uint16) * 257).astype(np.uint16))
    elif mode in ("RGBA", "LA"):
        img = rgb.convert(mode)
        img.putalpha(Image.fromarray(np.asarray(rgb)[:, :, 0]))
    else:
        img = rgb.convert(mode, **({"palette": Image.Palette.ADAPTIVE} if mode == "P" else {}))
    data = encoded(img, "TIFF" if mode == "CMYK" else "PNG")
    (tmp_path / "upload").write_bytes(data)
    with Image.open(to_rgb_file(tmp_path / "upload", tmp_path / "stored")) as f:
        stored = f.convert("RGB") if f.mode != "RGB" else f.copy()
    loaded = load_image(data)
    assert loaded.mode == "RGB" and np.array_equal(np.asarray(loaded), np.asarray(stored))
    recipe = RECIPES["resize and center crop"]
    expected = torchvision(recipe, stored)
    assert np.abs(Preprocessor({"transforms": recipe, "normalize": NORMALIZE})(loaded) - expected).max() <= 1e-6
    # and given the image itself, Preprocessor converts it the same way
    with Image.open(io.BytesIO(data)) as original:
        assert np.abs(Preprocessor({"transforms": recipe, "normalize": NORMALIZE})(original) - expected).max() <= 1e-6


def test_a_grayscale_image_is_repeated_on_three_channels_as_torchvision_does():
    img = picture(50, 70).convert("L")
    recipe = RECIPES["pad then resize"]
    assert np.abs(Preprocessor({"transforms": recipe})(img) - torchvision(recipe, img, None)).max() <= 1e-6


def test_an_exif_rotated_photo_is_turned_upright_as_training_turned_it(tmp_path):
    img = picture(40, 20)
    exif = Image.Exif()
    exif[0x0112] = 6  # rotated 90 degrees
    data = encoded(img, "JPEG", exif=exif, quality=95)
    (tmp_path / "upload").write_bytes(data)
    with Image.open(to_rgb_file(tmp_path / "upload", tmp_path / "stored")) as stored:
        assert np.array_equal(np.asarray(load_image(data)), np.asarray(stored))
    assert load_image(data).size == (20, 40)


def test_a_batch_stacks_images_of_one_size_and_names_different_sizes():
    p = Preprocessor({"transforms": RECIPES["resize and center crop"]})
    assert p.batch([picture(70, 90), picture(100, 64)]).shape == (2, 3, 56, 56)
    with pytest.raises(ValueError, match="different sizes"):
        Preprocessor({"transforms": None}).batch([picture(10, 10), picture(12, 10)])


# ---------------------------------------------------------------- recipes it cannot reproduce


@pytest.mark.parametrize("steps, named", [
    ([{"op": "color_jitter", "random": False, "brightness": 0.2, "contrast": 0, "saturation": 0, "hue": 0}],
     "step 1 ('color_jitter')"),
    ([T.step("resize", size=8), {"op": "sharpen", "random": False}], "step 2 ('sharpen')"),
    ([T.step("resize", size=-3)], "step 1 ('resize')"),
    ([T.step("pad", padding=2, fill=300)], "step 1 ('pad')"),
])
def test_a_step_it_cannot_reproduce_is_refused_by_name(steps, named):
    with pytest.raises(ValueError, match=named.replace("(", r"\(").replace(")", r"\)")):
        Preprocessor({"transforms": T.make_recipe(steps)})


def test_bad_normalize_and_recipes_are_refused():
    with pytest.raises(ValueError, match="normalize"):
        Preprocessor({"transforms": None, "normalize": [[0.5, 0.5, 0.5], [0, 1, 1]]})
    with pytest.raises(ValueError, match="recipe version 9"):
        Preprocessor({"transforms": {"version": 9, "steps": []}})
    with pytest.raises(ValueError, match="list of 'steps'"):
        Preprocessor({"transforms": "resize"})


# ---------------------------------------------------------------- bad images


def test_a_non_image_is_a_400_saying_so():
    with pytest.raises(BadImage, match="not an image") as e:
        load_image(b"hello, this is text, not a picture")
    assert e.value.status == 400
    with pytest.raises(BadImage, match="empty"):
        load_image(b"")


@pytest.mark.parametrize("fmt", ["PNG", "JPEG"])
def test_a_truncated_image_is_a_400_saying_truncated(fmt):
    data = encoded(picture(200, 150), fmt)
    with pytest.raises(BadImage, match="truncated") as e:
        load_image(data[: len(data) * 2 // 3])
    assert e.value.status == 400


def test_too_many_bytes_is_a_413_naming_the_limit():
    data = encoded(picture(64, 64))
    with pytest.raises(BadImage) as e:
        load_image(data + b"\0" * preprocess.MAX_IMAGE_BYTES)
    assert e.value.status == 413
    assert "the limit is 10 MB" in str(e.value) and "10.0 MB" in str(e.value)
    with pytest.raises(BadImage, match=r"the limit is 0.5 MB"):
        load_image(b"\0" * 600_000, max_bytes=512 * 1024)


def test_too_many_pixels_is_a_413_naming_the_limit():
    data = encoded(Image.new("L", (5000, 3000)))
    with pytest.raises(BadImage, match=r"5000 x 3000 pixels \(15.0 megapixels\), the limit is 10 megapixels") as e:
        load_image(data, max_pixels=10_000_000)
    assert e.value.status == 413


def test_a_decompression_bomb_is_a_413_and_no_warning_leaks():
    """A small PNG that declares 200 megapixels: PIL's own warning and error become our 413."""
    data = encoded(Image.new("1", (20_000, 10_000)))
    assert len(data) < preprocess.MAX_IMAGE_BYTES
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for limit in (preprocess.MAX_PIXELS, 10**12):
            with pytest.raises(BadImage, match="megapixels") as e:
                load_image(data, max_pixels=limit)
            assert e.value.status == 413


def test_the_file_stands_alone_with_numpy_and_pil():
    """It is copied into archives: importing it loads nothing of the project, nor torch."""
    code = ("import sys; sys.path.insert(0, 'sdk'); import preprocess; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('designer', 'modules', 'training', 'sdk', 'torch', 'torchvision', 'django')))")
    done = subprocess.run([sys.executable, "-I", "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
