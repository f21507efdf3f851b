import csv

import pytest
import yaml

from modules.convert_to_image_directory import ConvertToImageDirectory
from modules.split_image_directory import SplitImageDirectory
from sdk.errors import InvalidDatasetError, NotInRangeValueError
from tests.imagesets import digits_folder
from tests.modules.runner import run_module


def rows(out):
    with (out / "index.csv").open() as f:
        return [(r["path"], r["label"]) for r in csv.DictReader(f)]


def split(tmp_path, imagedir, name="split", **params):
    out = run_module(SplitImageDirectory, tmp_path / name, params, image_directory=imagedir)
    return out["results_dataset1"], out["results_dataset2"]


def test_it_splits_each_class_by_the_fraction(tmp_path, digits_imagedir):
    first, second = split(tmp_path, digits_imagedir, fraction=0.8)
    a, b = rows(first), rows(second)
    assert len(a) == 40 and len(b) == 10
    for digit in map(str, range(10)):
        assert sum(1 for _, label in a if label == digit) == 4
        assert sum(1 for _, label in b if label == digit) == 1
    assert not {p for p, _ in a} & {p for p, _ in b}
    for out in (first, second):
        meta = yaml.safe_load((out / "_meta.yaml").read_text())
        assert meta["type"] == "ImageDirectory" and meta["classes"] == [str(d) for d in range(10)]
    assert all((digits_imagedir / "images").exists() and p.startswith(str(digits_imagedir)) for p, _ in a)


def test_the_same_seed_gives_the_same_split_and_another_seed_another(tmp_path, digits_imagedir):
    one = rows(split(tmp_path, digits_imagedir, "one", random_seed=7)[0])
    two = rows(split(tmp_path, digits_imagedir, "two", random_seed=7)[0])
    other = rows(split(tmp_path, digits_imagedir, "other", random_seed=8)[0])
    assert one == two
    assert sorted(one) != sorted(other)


@pytest.mark.parametrize("fraction", [0, 1, -0.5, 1.5])
def test_it_refuses_a_fraction_outside_0_1(tmp_path, digits_imagedir, fraction):
    with pytest.raises(NotInRangeValueError, match=r"Split Image Directory: parameter 'Fraction of images in the first output': .* out of range: must be > 0 and < 1"):
        split(tmp_path, digits_imagedir, fraction=fraction)


def test_it_refuses_fewer_than_two_images(tmp_path, digits_imagedir):
    (tmp_path / "one").mkdir()
    (tmp_path / "one" / "index.csv").write_text(f"path,label\n{digits_imagedir}/{rows(digits_imagedir)[0][0]},0\n")
    (tmp_path / "one" / "_meta.yaml").write_text("type: ImageDirectory\nclasses: ['0']\ncount: 1\n")
    with pytest.raises(InvalidDatasetError, match=r"holds 1 image\(s\): at least 2 are needed"):
        split(tmp_path, tmp_path / "one")


def test_both_outputs_get_an_image_even_when_rounding_would_empty_one(tmp_path, digits_imagedir):
    first, second = split(tmp_path, digits_imagedir, fraction=0.01)
    assert len(rows(first)) == 1 and len(rows(second)) == 49


def test_by_default_nine_tenths_of_each_class_go_to_the_first_output(tmp_path):
    assert SplitImageDirectory.param("fraction").default == 0.9
    folder = digits_folder(tmp_path / "folder", per_class=50, size=8)
    imagedir = run_module(ConvertToImageDirectory, tmp_path / "convert", input_dataset=folder)["image_directory"]
    first, second = split(tmp_path, imagedir)  # no parameters: the declared defaults
    a, b = rows(first), rows(second)
    for digit in map(str, range(10)):
        assert (sum(1 for _, label in a if label == digit), sum(1 for _, label in b if label == digit)) == (45, 5)
    assert len(a) == 450 and len(b) == 50
