"""Fine-tuning (issue 13, item 3): Train PyTorch Model starts from a trained model. A tiny resnet18
learns digits 0-4 (24 x 24 pixels); it is then fine-tuned on digits 5, 6 and 7 (other classes: a
new head), on 0-4 again (the same classes: its head kept), with Freeze backbone (the head alone
learns), and under torchrun."""
import os
import subprocess
import sys

import pytest
import torch
import yaml

from modules.registered_model import RegisteredModel
from modules.train_pytorch_model import TrainPyTorchModel, training_argv
from sdk.errors import InvalidModelDirectoryError
from sdk.formats import model as model_format
from tests.conftest import ROOT
from tests.modules.model_helpers import digits_split, image_dir, node_log, one_thread, run, small_recipe, untrained  # noqa: F401
from training import finetune, models
from training import train as training

pytestmark = pytest.mark.usefixtures("one_thread")

SIZE = 24
OLD, NEW = {"0", "1", "2", "3", "4"}, {"5", "6", "7"}
FAST = {"epochs": 2, "batch_size": 16, "learning_rate": 0.05, "print_frequency": 0}


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """ImageDirectories of digits 0-4 and of digits 5-7 (30 training, 10 validation images a class)."""
    root = tmp_path_factory.mktemp("finetune")
    sets = {}
    for name, classes in (("old", OLD), ("new", NEW)):
        train, val = digits_split(root / name, per_class=40, size=SIZE, classes=classes)
        sets[name] = {"training_dataset": image_dir(root / f"{name}-t", train, small_recipe(SIZE), "training"),
                      "validation_dataset": image_dir(root / f"{name}-v", val, small_recipe(SIZE), "inference")}
    return {"root": root, **sets}


@pytest.fixture(scope="module")
def base(data, one_thread):  # noqa: F811 - the fixture
    """resnet18 trained from random weights on digits 0-4: its ModelDirectory and its weights."""
    out, _ = run(TrainPyTorchModel, data["root"] / "base", {**FAST, "epochs": 5},
                 untrained_model=untrained(data["root"] / "resnet"), **data["old"])
    trained = out["trained_model"]
    assert trained.meta["validation_top1_accuracy"] >= 0.8  # a model worth starting from
    return trained, torch.load(model_format.weights(trained.path), weights_only=True)


@pytest.fixture
def starts(monkeypatch):
    """What each training of this process starts with: its weights and the parameters its optimiser updates."""
    seen = []
    one_epoch = training.train_one_epoch

    def recording(model, criterion, optimizer, *args, **kwargs):
        if not seen or seen[-1]["model"] is not model:
            seen.append({"model": model, "state": {k: v.clone() for k, v in model.state_dict().items()},
                         "optimised": sum(p.numel() for g in optimizer.param_groups for p in g["params"])})
        return one_epoch(model, criterion, optimizer, *args, **kwargs)

    monkeypatch.setattr(training, "train_one_epoch", recording)
    return seen


def log_of(node_dir) -> str:
    return node_log(node_dir)


def spec_of(model_dir) -> dict:
    return yaml.safe_load((model_dir.path / model_format.SPEC_FILE).read_text())


BACKBONE = "layer1.0.conv1.weight"


def test_fine_tuning_on_other_classes_replaces_the_head_and_starts_from_the_trained_weights(tmp_path, data, base, starts):
    trained, weights = base
    out, events = run(TrainPyTorchModel, tmp_path / "ft", FAST, untrained_model=trained, **data["new"])
    tuned = out["trained_model"]
    assert ("fine-tuning resnet18 trained on 5 classes (0, 1, 2, 3, 4): the classifier head (fc) is replaced for "
            "3 classes (5, 6, 7), from random weights; the rest of the model starts from the trained weights") in log_of(tmp_path / "ft")
    start = starts[0]["state"]
    assert torch.equal(start["conv1.weight"], weights["conv1.weight"]) and torch.equal(start[BACKBONE], weights[BACKBONE])
    assert start["fc.weight"].shape == (3, 512)
    kept = torch.load(model_format.weights(tuned.path), weights_only=True)
    assert kept["fc.weight"].shape == (3, 512) and kept["fc.bias"].shape == (3,)
    assert not torch.equal(kept[BACKBONE], weights[BACKBONE])  # the whole model trained
    assert tuned.meta["classes"] == ["5", "6", "7"]
    assert spec_of(tuned)["fine_tuned_from"] == {"model_name": "resnet18", "classes": ["0", "1", "2", "3", "4"]}
    assert tuned.meta["fine_tuned_from"]["classes"] == ["0", "1", "2", "3", "4"]
    net, info = models.load_trained(tuned, "test")  # a reader of trained models takes it as any other
    assert info["classes"] == ["5", "6", "7"] and net(torch.zeros(2, 3, SIZE, SIZE)).shape == (2, 3)

    # the same two epochs from random weights: the trained backbone is what makes the difference
    scratch, _ = run(TrainPyTorchModel, tmp_path / "scratch", FAST, untrained_model=untrained(tmp_path / "r"),
                     **data["new"])
    assert not torch.equal(starts[1]["state"]["conv1.weight"], start["conv1.weight"])
    accuracy = tuned.meta["validation_top1_accuracy"]
    assert accuracy >= 0.6 and accuracy >= scratch["trained_model"].meta["validation_top1_accuracy"] + 0.2


def test_freeze_backbone_trains_the_classifier_head_alone(tmp_path, data, base, starts):
    trained, weights = base
    out, events = run(TrainPyTorchModel, tmp_path / "frozen", {**FAST, "freeze_backbone": True},
                      untrained_model=trained, **data["new"])
    assert ("Freeze backbone: training the classifier head (fc) only, 1,539 of 11,178,051 parameters; "
            "the backbone's weights and batch-norm statistics stay as they start") in log_of(tmp_path / "frozen")
    assert starts[0]["optimised"] == 3 * 512 + 3
    kept = torch.load(model_format.weights(out["trained_model"].path), weights_only=True)
    backbone = [k for k in kept if not k.startswith("fc.")]
    assert len(backbone) > 100 and all(torch.equal(kept[k], weights[k]) for k in backbone)  # running statistics too
    assert not torch.equal(kept["fc.weight"], starts[0]["state"]["fc.weight"])
    assert out["trained_model"].meta["validation_top1_accuracy"] >= 0.5  # the old features tell 5, 6, 7 apart


def test_the_same_classes_keep_the_trained_head(tmp_path, data, base, starts):
    trained, weights = base
    out, events = run(TrainPyTorchModel, tmp_path / "again", {**FAST, "epochs": 1}, untrained_model=trained,
                      **data["old"])
    assert ("fine-tuning resnet18 trained on 5 classes (0, 1, 2, 3, 4): the classifier head (fc) is kept, "
            "the training dataset has the same classes") in log_of(tmp_path / "again")
    start = starts[0]["state"]
    assert start.keys() == weights.keys() and all(torch.equal(start[k], weights[k]) for k in weights)
    assert spec_of(out["trained_model"])["fine_tuned_from"]["classes"] == ["0", "1", "2", "3", "4"]


def test_the_same_classes_in_another_order_keep_the_head_with_its_outputs_reordered(base):
    trained, _ = base
    spec = model_format.read(trained, "test")
    before, _ = models.load_trained(trained, "test")
    reordered = ["4", "2", "0", "1", "3"]
    after, line = finetune.start_model(spec, reordered, trained.path)
    after.eval()
    images = torch.randn(4, 3, SIZE, SIZE)
    with torch.no_grad():
        assert torch.allclose(after(images), before(images)[:, [4, 2, 0, 1, 3]], atol=1e-5)
    assert "the classifier head (fc) is kept, its outputs put in the order of the training dataset's classes (4, 2, 0, 1, 3)" in line


@pytest.mark.timeout(600)
def test_under_torchrun_a_frozen_fine_tuning_trains_the_head_alone(tmp_path, data, base):
    trained, weights = base
    out = tmp_path / "model"
    params = {**TrainPyTorchModel.resolved_params({}), **FAST, "batch_size": 8, "freeze_backbone": True,
              "sync_batchnorm": True}
    argv = training_argv(trained.path, data["new"]["training_dataset"].path, data["new"]["validation_dataset"].path,
                         out, params, threads=1)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OMP_WAIT_POLICY": "PASSIVE", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
                           "-m", "training.train", *argv], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=540, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.count("the classifier head (fc) is replaced for 3 classes (5, 6, 7)") == 1  # rank 0 logs
    assert "Freeze backbone: training the classifier head (fc) only, 1,539 of" in done.stdout
    kept = torch.load(model_format.weights(out), weights_only=True)
    assert kept["fc.weight"].shape == (3, 512)
    assert all(torch.equal(kept[k], weights[k]) for k in kept if not k.startswith("fc."))
    assert yaml.safe_load((out / model_format.SPEC_FILE).read_text())["fine_tuned_from"]["model_name"] == "resnet18"


def test_a_densenet_gets_a_new_classifier_and_freezes_all_but_it(tmp_path):
    spec = {"family": "densenet", "model_name": "densenet121", "pretrained": False, "weights": None,
            "kwargs": {"memory_efficient": False}}
    torch.manual_seed(0)
    state = models.build_model(spec, 4).state_dict()
    models.write_trained(tmp_path, spec, state, {"classes": ["cat", "dog", "fox", "owl"]})
    trained = model_format.read_info(tmp_path)
    net, line = finetune.start_model(trained, ["apple", "pear"], tmp_path)
    assert line == ("fine-tuning densenet121 trained on 4 classes (cat, dog, fox, owl): the classifier head (classifier) "
                    "is replaced for 2 classes (apple, pear), from random weights; the rest of the model starts from the "
                    "trained weights")
    assert net.classifier.out_features == 2 and torch.equal(net.features.conv0.weight, state["features.conv0.weight"])
    assert "training the classifier head (classifier) only, 2,050 of " in finetune.freeze_backbone(net, trained)
    assert [n for n, p in net.named_parameters() if p.requires_grad] == ["classifier.weight", "classifier.bias"]
    finetune.train_mode(net)  # the frozen batch-norm layers keep their statistics
    assert net.training and not net.features.norm0.training and net.classifier.training


def test_weights_that_do_not_fit_the_trained_model_are_named(tmp_path):
    spec = {"family": "resnet", "model_name": "resnet18", "pretrained": False, "weights": None, "kwargs": {}}
    models.write_trained(tmp_path, spec, models.build_model(spec, 4).state_dict(), {"classes": ["a", "b", "c"]})
    with pytest.raises(InvalidModelDirectoryError, match=r"the weights of the trained model \(.*model.pt\) do not load "
                                                         r"into resnet18 with 3 classes: .*size mismatch"):
        finetune.start_model(model_format.read_info(tmp_path), ["x", "y"], tmp_path)


def test_freezing_a_backbone_of_random_weights_says_it_learns_little():
    spec = {"family": "resnet", "model_name": "resnet18", "pretrained": False, "weights": None, "kwargs": {}}
    line = finetune.freeze_backbone(models.build_model(spec, 2), spec)
    assert "1,026 of 11,177,538 parameters" in line and "random weights here" in line


def test_a_registered_model_is_fine_tuned_and_the_new_model_says_which_version_it_started_from(tmp_path, data, base):
    trained, weights = base
    # the server fills in Stored folder at submit (designer/pipelines/registry/service.py); here: the base model's folder
    registered, _ = run(RegisteredModel, tmp_path / "registered", {"model": "digits", "version": 2,
                                                                   "stored_folder": str(trained.path)})
    out, events = run(TrainPyTorchModel, tmp_path / "ft", {**FAST, "epochs": 1}, untrained_model=registered["trained_model"],
                      **data["new"])
    assert "the classifier head (fc) is replaced for 3 classes (5, 6, 7)" in log_of(tmp_path / "ft")
    assert spec_of(out["trained_model"])["fine_tuned_from"] == {
        "model_name": "resnet18", "classes": ["0", "1", "2", "3", "4"], "registered_model": "digits", "registered_version": 2}
    kept = torch.load(model_format.weights(out["trained_model"].path), weights_only=True)
    assert kept["fc.weight"].shape == (3, 512)
