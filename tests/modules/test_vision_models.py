import pytest
import torch
import torchvision

from modules.densenet import DenseNet
from modules.resnet import ResNet
from sdk.errors import ModuleError, NotInRangeValueError
from sdk.formats.untrained_model import INITIAL_STATE, read_spec
from tests.modules.model_helpers import run
from training import models

# the file torchvision's DEFAULT (best) ImageNet weights of each model name are kept in
WEIGHTS_FILES = {
    "resnet18": "resnet18-f37072fd.pth", "resnet34": "resnet34-b627a593.pth", "resnet50": "resnet50-11ad3fa6.pth",
    "resnet101": "resnet101-cd907fc2.pth", "resnet152": "resnet152-f82ba261.pth",
    "resnext50_32x4d": "resnext50_32x4d-1a0047aa.pth", "resnext101_32x8d": "resnext101_32x8d-110c445d.pth",
    "wide_resnet50_2": "wide_resnet50_2-9ba9bcbe.pth", "wide_resnet101_2": "wide_resnet101_2-d733dc28.pth",
    "densenet121": "densenet121-a639ec97.pth", "densenet161": "densenet161-8d451a50.pth",
    "densenet169": "densenet169-b2777c0a.pth", "densenet201": "densenet201-c1103571.pth",
}
MODULE_OF = {name: ResNet if name in ResNet.param("model_name").choices else DenseNet for name in WEIGHTS_FILES}


@pytest.fixture
def hub(tmp_path, monkeypatch):
    """An empty torch hub cache of our own: nothing is ever downloaded."""
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch_home"))
    return tmp_path / "torch_home" / "hub" / "checkpoints"


def test_defaults_are_the_reference_ones():
    assert ResNet.param("model_name").default == "resnext101_32x8d"
    assert ResNet.param("model_name").choices == (
        "resnet18", "resnet34", "resnet50", "resnet101", "resnet152", "resnext50_32x4d", "resnext101_32x8d",
        "wide_resnet50_2", "wide_resnet101_2")
    assert DenseNet.param("model_name").choices == ("densenet121", "densenet161", "densenet169", "densenet201")
    assert DenseNet.param("model_name").default == "densenet201"
    assert ResNet.param("pretrained").default is True and DenseNet.param("pretrained").default is True
    assert ResNet.param("zero_init_residual").default is False
    assert DenseNet.param("memory_efficient").default is False


def test_untrained_resnet_records_its_architecture(tmp_path):
    out, _ = run(ResNet, tmp_path / "r", {"model_name": "resnet18", "pretrained": False, "zero_init_residual": True})
    art = out["untrained_model"]
    assert art.type == "UntrainedModelDirectory"
    spec = read_spec(art, "t", "model", "UntrainedModelDirectory")
    assert spec["kwargs"] == {"zero_init_residual": True} and not (art.path / INITIAL_STATE).exists()
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
    model = models.build_model(read_spec(art, "t", "m", "UntrainedModelDirectory"), 4, art.path)
    assert torch.equal(model.conv1.weight, reference.conv1.weight)
    assert model.fc.out_features == 4  # the head is sized for our classes


def test_a_corrupt_weights_file_is_named(tmp_path, hub):
    hub.mkdir(parents=True)
    (hub / "resnet18-f37072fd.pth").write_bytes(b"not a checkpoint")
    with pytest.raises(ModuleError, match="resnet18-f37072fd.pth"):
        run(ResNet, tmp_path / "r", {"model_name": "resnet18"})


def test_an_untrained_densenet_keeps_its_memory_efficient_option(tmp_path):
    out, _ = run(DenseNet, tmp_path / "d", {"model_name": "densenet121", "pretrained": False, "memory_efficient": True})
    spec = read_spec(out["untrained_model"], "t", "model", "UntrainedModelDirectory")
    model = models.build_model(spec, 5, out["untrained_model"].path)
    assert model.classifier.out_features == 5
    assert all(layer.memory_efficient for name, layer in model.features.named_modules() if name.endswith("denselayer1"))


@pytest.mark.parametrize("name", list(WEIGHTS_FILES))
def test_every_model_name_resolves_to_torchvision_weights_and_a_missing_file_is_named(tmp_path, hub, name):
    weights = models.weights_enum(name)
    assert isinstance(weights, torchvision.models.get_model_weights(name))
    assert weights.url.endswith("/" + WEIGHTS_FILES[name])
    with pytest.raises(models.WeightsNotAvailableError) as e:
        run(MODULE_OF[name], tmp_path / "m", {"model_name": name, "pretrained": True})
    message = str(e.value)
    assert message.startswith(f"{MODULE_OF[name].label}: the pretrained weights of {name} ")
    assert f"put the file {WEIGHTS_FILES[name]} " in message and f"in the folder {hub}," in message


def test_pretrained_densenet_weights_load_through_torchvision_from_the_hub_cache(tmp_path, hub):
    torch.manual_seed(0)
    reference = torchvision.models.densenet121()  # same names and shapes as the ImageNet file
    hub.mkdir(parents=True)
    torch.save(reference.state_dict(), hub / "densenet121-a639ec97.pth")

    out, _ = run(DenseNet, tmp_path / "d", {"model_name": "densenet121"})
    art = out["untrained_model"]
    assert art.meta["pretrained"] is True and (art.path / INITIAL_STATE).is_file()
    model = models.build_model(read_spec(art, "t", "m", "UntrainedModelDirectory"), 4, art.path)
    assert torch.equal(model.features.conv0.weight, reference.features.conv0.weight)
    assert torch.equal(model.features.denseblock4.denselayer16.conv2.weight,
                       reference.features.denseblock4.denselayer16.conv2.weight)
    assert model.classifier.out_features == 4  # the head is sized for our classes


def _last_bn_weights(model) -> list:
    """The last BatchNorm of every residual block (BasicBlock: bn2, Bottleneck: bn3)."""
    from torchvision.models.resnet import BasicBlock, Bottleneck

    blocks = [m for m in model.modules() if isinstance(m, (BasicBlock, Bottleneck))]
    assert blocks
    return [(b.bn3 if isinstance(b, Bottleneck) else b.bn2).weight for b in blocks]


@pytest.mark.parametrize("name", ["resnet18", "resnext50_32x4d"])  # BasicBlock, Bottleneck
def test_zero_init_residual_zeroes_the_last_batchnorm_of_every_residual_block(tmp_path, name):
    built = {}
    for zero in (True, False):
        out, _ = run(ResNet, tmp_path / str(zero), {"model_name": name, "pretrained": False, "zero_init_residual": zero})
        art = out["untrained_model"]
        built[zero] = models.build_model(read_spec(art, "t", "m", "UntrainedModelDirectory"), 3, art.path)
    assert all(torch.count_nonzero(w) == 0 for w in _last_bn_weights(built[True]))
    assert all(torch.count_nonzero(w) == w.numel() for w in _last_bn_weights(built[False]))  # BatchNorm's usual 1


def test_a_model_name_outside_the_list_is_refused_naming_the_parameter(tmp_path):
    with pytest.raises(NotInRangeValueError, match="ResNet: parameter 'Model name': 'resnet9' is not one of"):
        run(ResNet, tmp_path / "r", {"model_name": "resnet9", "pretrained": False})
