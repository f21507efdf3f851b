"""What a component's model folder holds (sdk/formats/custom_model.py), as the registry records it."""
import sys

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


def test_an_entry_scripts_model_get_model_path_is_the_deployed_folder_or_its_one_file(tmp_path, monkeypatch):
    from sdk import compat

    monkeypatch.syspath_prepend(str(compat.AZUREML))
    for name in [m for m in sys.modules if m == "azureml" or m.startswith("azureml.")]:
        monkeypatch.delitem(sys.modules, name)  # and put back (or forgotten) after the test
    from azureml.core.model import Model

    try:
        monkeypatch.delenv("AZUREML_MODEL_DIR", raising=False)
        with pytest.raises(RuntimeError, match="no model is deployed here"):
            Model.get_model_path("chickens")
        monkeypatch.setenv("AZUREML_MODEL_DIR", str(tmp_path))
        (tmp_path / "_meta.yaml").write_text("type: ModelDirectory\n")
        (tmp_path / "model.pkl").write_bytes(b"x")
        assert Model.get_model_path("chickens") == str(tmp_path / "model.pkl")  # registered from one file
        (tmp_path / "labels.txt").write_text("a\n")
        assert Model.get_model_path("chickens", version=1) == str(tmp_path)
    finally:  # the shim leaves with its path: other tests import no azureml
        for name in [m for m in sys.modules if m == "azureml" or m.startswith("azureml.")]:
            del sys.modules[name]
