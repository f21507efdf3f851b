import pytest
import torch
import torchvision

from modules.base import ModuleError
from modules.densenet import DenseNet
from modules.resnet import ResNet
from tests.modules.model_helpers import run
from training import models


@pytest.fixture
def hub(tmp_path, monkeypatch):
    """An empty torch hub cache of our own: nothing is ever downloaded."""
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch_home"))
    return tmp_path / "torch_home" / "hub" / "checkpoints"


def test_defaults_are_the_reference_ones():
    assert ResNet.param("model_name").default == "resnext101_32x8d"
    assert len(ResNet.param("model_name").choices) == 9
    assert DenseNet.param("model_name").default == "densenet201"
    assert ResNet.param("pretrained").default is True and DenseNet.param("pretrained").default is True
    assert ResNet.param("zero_init_residual").default is False
    assert DenseNet.param("memory_efficient").default is False


def test_untrained_resnet_records_its_architecture(tmp_path):
    out, _ = run(ResNet, tmp_path / "r", {"model_name": "resnet18", "pretrained": False, "zero_init_residual": True})
    art = out["untrained_model"]
    assert art.type == "UntrainedModelDirectory"
    spec = models.read_spec(art, "t", "model", "UntrainedModelDirectory")
    assert spec["kwargs"] == {"zero_init_residual": True} and not (art.path / models.INITIAL_STATE).exists()
    model = models.build_model(spec, 3, art.path)
    assert model.fc.out_features == 3


def test_missing_pretrained_weights_name_the_file_and_the_folder(tmp_path, hub):
    with pytest.raises(ModuleError) as e:
        run(DenseNet, tmp_path / "d", {"model_name": "densenet121"})
    message = str(e.value)
    assert "densenet121-a639ec97.pth" in message and str(hub) in message
    assert not hub.exists()  # nothing was downloaded


def test_pretrained_weights_load_through_torchvision_from_the_hub_cache(tmp_path, hub):
    torch.manual_seed(0)
    reference = torchvision.models.resnet18()  # stands in for the ImageNet file: same names and shapes
    hub.mkdir(parents=True)
    torch.save(reference.state_dict(), hub / "resnet18-f37072fd.pth")

    out, _ = run(ResNet, tmp_path / "r", {"model_name": "resnet18"})
    art = out["untrained_model"]
    assert art.meta["pretrained"] is True
    model = models.build_model(models.read_spec(art, "t", "m", "UntrainedModelDirectory"), 4, art.path)
    assert torch.equal(model.conv1.weight, reference.conv1.weight)
    assert model.fc.out_features == 4  # the head is sized for our classes


def test_a_corrupt_weights_file_is_named(tmp_path, hub):
    hub.mkdir(parents=True)
    (hub / "resnet18-f37072fd.pth").write_bytes(b"not a checkpoint")
    with pytest.raises(ModuleError, match="resnet18-f37072fd.pth"):
        run(ResNet, tmp_path / "r", {"model_name": "resnet18"})


def test_an_untrained_densenet_keeps_its_memory_efficient_option(tmp_path):
    out, _ = run(DenseNet, tmp_path / "d", {"model_name": "densenet121", "pretrained": False, "memory_efficient": True})
    spec = models.read_spec(out["untrained_model"], "t", "model", "UntrainedModelDirectory")
    model = models.build_model(spec, 5, out["untrained_model"].path)
    assert model.classifier.out_features == 5
    assert all(layer.memory_efficient for name, layer in model.features.named_modules() if name.endswith("denselayer1"))
