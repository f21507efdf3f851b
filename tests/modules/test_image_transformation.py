import json

import pytest
import yaml
from PIL import Image

from modules.apply_image_transformation import ApplyImageTransformation
from modules.init_image_transformation import InitImageTransformation
from sdk.errors import InvalidTransformationDirectoryError, NotInRangeValueError
from sdk.formats import transformation as T
from tests.modules.runner import run_module
from training.transforms import build_transform

EVERY_SWITCH = ["resize", "center_crop", "color_jitter", "grayscale", "random_resized_crop", "random_crop",
                "random_horizontal_flip", "random_vertical_flip", "random_rotation", "random_affine",
                "random_grayscale", "random_perspective", "random_erasing"]


def init(tmp_path, name="init", **params):
    return run_module(InitImageTransformation, tmp_path / name, params)["image_transformation"]


def apply(tmp_path, transformation, imagedir, name="apply", **params):
    return run_module(ApplyImageTransformation, tmp_path / name, params, image_transformation=transformation,
                      image_directory=imagedir)["transformed_image_directory"]


def recipe_of(out):
    return json.loads((out / "transform.json").read_text())


def meta(out):
    return yaml.safe_load((out / "_meta.yaml").read_text())


def test_init_defaults_follow_the_reference(tmp_path):
    out = init(tmp_path)
    assert meta(out)["type"] == "TransformationDirectory"
    steps = recipe_of(out)["steps"]
    assert [(s["op"], s.get("size")) for s in steps] == [("resize", 256), ("center_crop", 224), ("random_horizontal_flip", None)]
    params = {p.name: p.default for p in InitImageTransformation.params}
    assert params["pad"] == 0 and params["random_resized_crop_size"] == 256 and params["random_crop_size"] == 224
    assert not any(params[s] for s in EVERY_SWITCH if s not in ("resize", "center_crop", "random_horizontal_flip"))


def test_every_step_of_the_reference_can_be_switched_on_and_runs_on_torchvision(tmp_path):
    on = {s: True for s in EVERY_SWITCH}
    out = init(tmp_path, size=20, crop_size=18, pad=1, random_resized_crop_size=16, random_crop_size=12,
               random_rotation_degrees=15, random_affine_degrees=10, **on)
    recipe = recipe_of(out)
    ops = [s["op"] for s in recipe["steps"]]
    assert ops == ["resize", "center_crop", "pad", "color_jitter", "grayscale", "random_resized_crop", "random_crop",
                   "random_horizontal_flip", "random_vertical_flip", "random_rotation", "random_affine",
                   "random_grayscale", "random_perspective", "random_erasing"]
    image = Image.new("RGB", (30, 24), (200, 100, 50))
    training = build_transform(recipe, "For training")
    assert [type(t).__name__ for t in training.transforms] == [
        "ToImage", "RGB", "Resize", "CenterCrop", "Pad", "ColorJitter", "Grayscale", "RandomResizedCrop", "RandomCrop",
        "RandomHorizontalFlip", "RandomVerticalFlip", "RandomRotation", "RandomAffine", "RandomGrayscale",
        "RandomPerspective", "ToDtype", "RandomErasing"]  # erasing works on float tensors: after ToDtype
    tensor = training(image)
    assert tuple(tensor.shape) == (3, 12, 12) and str(tensor.dtype) == "torch.float32"
    assert float(tensor.min()) >= 0 and float(tensor.max()) <= 1
    inference = build_transform(recipe, "For inference")
    assert [type(t).__name__ for t in inference.transforms] == [
        "ToImage", "RGB", "Resize", "CenterCrop", "Pad", "Grayscale", "ToDtype"]
    assert tuple(inference(image).shape) == (3, 20, 20)


@pytest.mark.parametrize(("param", "value"), [("size", 0), ("crop_size", -1), ("pad", -2),
                                              ("random_rotation_degrees", 181), ("color_jitter_hue", 0.9)])
def test_init_refuses_values_out_of_range(tmp_path, param, value):
    label = InitImageTransformation.param(param).label
    with pytest.raises(NotInRangeValueError, match=rf"Init Image Transformation: parameter '{label}': .*out of range"):
        init(tmp_path, **{param: value})


def test_apply_records_the_recipe_and_mode_on_the_image_directory(tmp_path, digits_imagedir):
    transformation = init(tmp_path, size=16, crop_size=12)
    out = apply(tmp_path, transformation, digits_imagedir)
    m = meta(out)
    assert m["type"] == "ImageDirectory" and m["count"] == 50 and m["classes"] == [str(d) for d in range(10)]
    assert m["transforms"]["mode"] == "training"
    assert [s["op"] for s in m["transforms"]["steps"]] == ["resize", "center_crop", "random_horizontal_flip"]
    assert not (out / "images").exists()  # the index points at the input's images
    first = (out / "index.csv").read_text().splitlines()[1].split(",")[0]
    with Image.open(first) as img:
        assert tuple(build_transform(m["transforms"])(img).shape) == (3, 12, 12)


def test_for_inference_drops_every_random_step_and_is_deterministic(tmp_path, digits_imagedir):
    transformation = init(tmp_path, size=16, crop_size=14, random_rotation=True, random_rotation_degrees=90,
                          random_erasing=True, color_jitter=True)
    out = apply(tmp_path, transformation, digits_imagedir, mode="For inference")
    recorded = meta(out)["transforms"]
    assert recorded["mode"] == "inference"
    assert [s["op"] for s in T.active_steps(recorded)] == ["resize", "center_crop"]
    first = (out / "index.csv").read_text().splitlines()[1].split(",")[0]
    with Image.open(first) as img:
        transform = build_transform(recorded)
        assert transform(img).equal(transform(img))


def test_a_crop_larger_than_the_image_is_refused(tmp_path, digits_imagedir):
    transformation = init(tmp_path, resize=False)  # center crop 224 on 16x16 images
    with pytest.raises(NotInRangeValueError, match=r"Apply Image Transformation: Crop size 224x224 is larger than the image, "
                                                   r"which is 16x16 at that step .*: image .*\.png"):
        apply(tmp_path, transformation, digits_imagedir)


def test_a_random_crop_larger_than_the_image_is_refused_for_training_only(tmp_path, digits_imagedir):
    transformation = init(tmp_path, size=16, center_crop=False, random_crop=True, random_crop_size=20)
    with pytest.raises(NotInRangeValueError, match="Random crop size 20x20 is larger than the image"):
        apply(tmp_path, transformation, digits_imagedir)
    apply(tmp_path, transformation, digits_imagedir, name="inference", mode="For inference")


def test_a_directory_that_is_not_a_transformation_is_refused(tmp_path, digits_imagedir):
    with pytest.raises(InvalidTransformationDirectoryError,
                       match="Image transformation input must be a TransformationDirectory .*, got ImageDirectory"):
        apply(tmp_path, digits_imagedir, digits_imagedir)


def test_a_damaged_recipe_is_refused(tmp_path, digits_imagedir):
    transformation = init(tmp_path)
    (transformation / "transform.json").write_text('{"steps": [{"op": "explode"}]}')
    with pytest.raises(InvalidTransformationDirectoryError, match="not a usable recipe: step 1 is not a known"):
        apply(tmp_path, transformation, digits_imagedir)
