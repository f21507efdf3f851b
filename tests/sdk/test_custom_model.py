"""What a component's model folder holds (sdk/formats/custom_model.py), as the registry records it."""
import pytest
import yaml

from sdk.component_fields import PORT_ALIASES
from sdk.formats import custom_model


@pytest.mark.parametrize("files, expected", [
    ({"model.pt": b"weights"}, "pytorch"),
    ({"outputs.pth": b"weights", "labels.txt": b"a"}, "pytorch"),
    ({"net.onnx": b"graph"}, "onnx"),
    ({"MLmodel": b"flavors: {}", "model.pkl": b"x", "conda.yaml": b""}, "mlflow"),
    ({"model.yaml": yaml.safe_dump({"model_name": "resnet18", "classes": ["a", "b"]}).encode(), "model.pt": b"w"}, "designer"),
    ({"model.yaml": b"not: a model", "model.pt": b"w"}, "pytorch"),  # a model.yaml of its own: not the designer's
    ({"notes.txt": b"hello"}, "folder"),
])
def test_a_model_folder_says_what_it_holds(tmp_path, files, expected):
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    assert custom_model.format_of(tmp_path) == expected


def test_azure_mls_model_output_types_are_model_directories():
    assert PORT_ALIASES["custom_model"] == PORT_ALIASES["mlflow_model"] == "ModelDirectory"
    assert set(custom_model.MODEL_TYPES) == {"ModelDirectory", "OnnxModel"}
