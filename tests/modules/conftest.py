import pytest

from modules.convert_to_image_directory import ConvertToImageDirectory
from tests.imagesets import digits_folder
from tests.modules.runner import run_module


@pytest.fixture(scope="session")
def digits_imagedir(tmp_path_factory):
    """An ImageDirectory of 50 digits (5 per class), 16x16 pixels, made by Convert to Image Directory."""
    root = tmp_path_factory.mktemp("digits_imagedir")
    folder = digits_folder(root / "folder", per_class=5, size=16)
    return run_module(ConvertToImageDirectory, root / "convert", input_dataset=folder)["image_directory"]
