"""Pre-flight problems (Module.preflight): what would fail on this machine is shown before submit.

The default ResNet (pretrained) failed the first run of every offline user: its weights are never
downloaded. graph.validate() now says so at once, naming the module, the parameter, the file and
the folder, and what to do."""
from pathlib import Path

import pytest

from designer.engine import graph
from modules import catalogue as module_catalogue
from modules._vision_models import WEIGHTS_FILES, hub_checkpoints
from modules.densenet import DenseNet
from modules.resnet import ResNet
from sdk.declarations import Module
from tests.pipes import node, pipeline

CAT = module_catalogue.Catalogue([ResNet, DenseNet])


@pytest.fixture
def hub(tmp_path, monkeypatch):
    """An empty torch hub cache of our own."""
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch_home"))
    return tmp_path / "torch_home" / "hub" / "checkpoints"


def test_a_module_declares_no_preflight_problem_by_default():
    assert Module.preflight({}) == []


def test_missing_pretrained_weights_are_a_problem_of_the_pretrained_parameter(hub):
    problems = graph.validate(pipeline([node("n5", "resnet", model_name="resnet18")], []), CAT)
    assert [(p.code, p.node, p.param) for p in problems] == [("preflight", "n5", "pretrained")]
    assert problems[0].message == (f"Pretrained: the weights resnet18-f37072fd.pth are not on this machine ({hub}): "
                                   "untick Pretrained, or copy the file there")
    # the way out, one click on the page: no other ResNet's weights are here either
    assert list(problems[0].as_dict()["fixes"]) == [{"label": "Untick Pretrained", "parameters": {"pretrained": False}}]


def test_the_default_resnet_names_the_file_of_its_default_model(hub):
    (problem,) = graph.validate(pipeline([node("r", "resnet")], []), CAT)
    assert "resnext101_32x8d-110c445d.pth" in problem.message


def test_no_problem_once_the_file_is_there_or_pretrained_is_off(hub):
    hub.mkdir(parents=True)
    (hub / "densenet121-a639ec97.pth").write_bytes(b"weights")
    doc = pipeline([node("d", "densenet", model_name="densenet121"), node("r", "resnet", pretrained=False)], [])
    assert graph.validate(doc, CAT) == []


def test_a_bad_value_is_reported_alone_and_a_bound_parameter_waits_for_submit(hub):
    bad = graph.validate(pipeline([node("r", "resnet", model_name="resnet7")], []), CAT)
    assert [p.code for p in bad] == ["bad_value"]
    bound = node("r", "resnet", model_name="resnet18")
    bound["bindings"] = {"pretrained": "warm"}
    doc = pipeline([bound], [])
    doc["parameters"] = [{"name": "warm", "type": "bool", "default": False}]
    assert graph.validate(doc, CAT) == []


def test_the_hub_folder_is_the_one_torch_reads(monkeypatch, tmp_path):
    monkeypatch.delenv("TORCH_HOME", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert hub_checkpoints() == tmp_path / "xdg" / "torch" / "hub" / "checkpoints"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert hub_checkpoints() == Path.home() / ".cache" / "torch" / "hub" / "checkpoints"
    torch = pytest.importorskip("torch")
    for env in ({}, {"XDG_CACHE_HOME": str(tmp_path / "x")}, {"TORCH_HOME": str(tmp_path / "t")}):
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        assert hub_checkpoints() == Path(torch.hub.get_dir()) / "checkpoints"


def test_the_weights_table_is_torchvisions():
    pytest.importorskip("torchvision")
    from training import models

    names = set(ResNet.param("model_name").choices) | set(DenseNet.param("model_name").choices)
    assert set(WEIGHTS_FILES) == names
    for name in names:
        assert models.cached_weights_path(models.weights_enum(name)).name == WEIGHTS_FILES[name], name


def test_with_workers_the_weights_must_be_on_one_of_them_not_on_the_web_machine(hub):
    """In production the web app runs elsewhere: the workers' reports (their heartbeat) say."""
    from sdk.declarations import Machine

    doc = pipeline([node("r", "resnet", model_name="resnet18")], [])
    w1 = Machine("w1@gpu-a", "/srv/torch/hub/checkpoints", frozenset({"densenet121-a639ec97.pth"}))
    w2 = Machine("w2@gpu-b", "~/.cache/torch/hub/checkpoints", frozenset())
    (alone,) = graph.validate(doc, CAT, (w1,))
    assert alone.message == ("Pretrained: the weights resnet18-f37072fd.pth are not on worker w1@gpu-a "
                             "(/srv/torch/hub/checkpoints): untick Pretrained, or copy the file there")
    (both,) = graph.validate(doc, CAT, (w1, w2))
    assert both.message == ("Pretrained: the weights resnet18-f37072fd.pth are on none of the 2 workers (w1@gpu-a: "
                            "/srv/torch/hub/checkpoints; w2@gpu-b: ~/.cache/torch/hub/checkpoints): untick Pretrained, "
                            "or copy the file to their torch hub folder")
    has_it = Machine("w2@gpu-b", "/x", frozenset({"resnet18-f37072fd.pth"}))
    assert graph.validate(doc, CAT, (w1, has_it)) == []  # this machine's empty folder does not count
    # the default ResNet where another one's weights are: that one is offered first
    (default,) = graph.validate(pipeline([node("r", "resnet")], []), CAT, (w1, has_it))
    assert [f["label"] for f in default.fixes] == ["Use resnet18 (its weights are there)", "Untick Pretrained"]
    assert default.fixes[0]["parameters"] == {"model_name": "resnet18"}
    assert [p.code for p in graph.validate(doc, CAT)] == ["preflight"]  # no worker said: this machine
