import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml

from designer.engine import executor
from modules.train_pytorch_model import TrainPyTorchModel, training_argv
from sdk.errors import Cancelled, InvalidDatasetError, InvalidModelDirectoryError, NotInRangeValueError, NotLabeledDatasetError
from sdk.formats import model as model_format
from sdk.formats.image_directory import read_path
from tests.modules.model_helpers import (  # noqa: F401 - one_thread is a fixture
    digits_split,
    image_dir,
    metrics,
    node_log,
    one_thread,
    run,
    small_recipe,
    untrained,
)
from training import models
from training.data import IMAGENET_NORMALIZE, ImageDirDataset
from training.train import BestEpoch, TrainingDivergedError, evaluate, lr_factor
from training.transforms import build_transform

pytestmark = pytest.mark.usefixtures("one_thread")
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def digits(tmp_path_factory):
    """60 training and 20 validation digits (10 classes, 32x32)."""
    return digits_split(tmp_path_factory.mktemp("digits"), per_class=8)


@pytest.fixture
def inputs(tmp_path, digits):
    train, val = digits
    recipe = small_recipe(flip=True)
    return {"untrained_model": untrained(tmp_path / "resnet"),
            "training_dataset": image_dir(tmp_path / "train", train, recipe, "training"),
            "validation_dataset": image_dir(tmp_path / "val", val, recipe, "inference")}


FAST = {"epochs": 2, "batch_size": 16, "learning_rate": 0.05, "print_frequency": 2}


def test_defaults_are_the_reference_ones():
    defaults = {p.name: p.default for p in TrainPyTorchModel.params}
    assert defaults == {"epochs": 5, "batch_size": 16, "warmup_step_number": 0, "learning_rate": 0.001,
                        "random_seed": 1, "patience": 3, "print_frequency": 10, "checkpoint_every_minutes": 10,
                        "sync_batchnorm": False,
                        "freeze_backbone": False, "mixed_precision": "auto"}
    assert TrainPyTorchModel.distributed


def test_it_trains_reports_every_epoch_and_repeats_itself_exactly(tmp_path, inputs):
    out, events = run(TrainPyTorchModel, tmp_path / "a", {**FAST, "warmup_step_number": 3}, **inputs)
    model_dir = out["trained_model"]
    assert model_dir.type == "ModelDirectory" and model_dir.meta["classes"] == [str(d) for d in range(10)]
    spec = yaml.safe_load((model_dir.path / model_format.SPEC_FILE).read_text())
    assert spec["transforms"]["mode"] == "inference" and spec["model_name"] == "resnet18"
    names = {(name, step) for name, _, step in metrics(events)}
    for epoch in (1, 2):
        for name in ("learning_rate", "training_images_per_second", "training_loss", "training_error",
                     "training_top1_accuracy", "validation_loss", "validation_top1_accuracy", "validation_top5_accuracy"):
            assert (name, epoch) in names
    log = node_log(tmp_path / "a")
    accuracy = {step: value for name, value, step in metrics(events) if name == "training_top1_accuracy"}
    errors = {step: value for name, value, step in metrics(events) if name == "training_error"}
    assert accuracy == pytest.approx({e: 1 - errors[e] for e in errors})
    assert "Epoch 2: lr 0.000000" in log and "[1] [2/4]" in log  # print frequency 2 of 4 steps
    assert not (tmp_path / "a" / "work").exists()

    _, again = run(TrainPyTorchModel, tmp_path / "b", {**FAST, "warmup_step_number": 3}, **inputs)
    timing = "training_images_per_second"
    assert [m for m in metrics(again) if m[0] != timing] == [m for m in metrics(events) if m[0] != timing]


def test_it_keeps_the_weights_of_the_best_epoch(tmp_path, inputs):
    out, _ = run(TrainPyTorchModel, tmp_path / "n", {**FAST, "epochs": 3, "patience": 3, "learning_rate": 0.2},
                 **inputs)
    spec = yaml.safe_load((out["trained_model"].path / model_format.SPEC_FILE).read_text())
    losses = [h["validation_loss"] for h in spec["history"]]
    assert spec["best_epoch"] == 1 + losses.index(min(losses))
    # scoring the weights kept gives the best epoch's validation loss again
    model, info = models.load_trained(out["trained_model"], "test")
    dataset = ImageDirDataset(read_path(inputs["validation_dataset"].path), info["classes"],
                              build_transform(info["transforms"], None, IMAGENET_NORMALIZE))
    again = evaluate(model, torch.nn.CrossEntropyLoss(), torch.utils.data.DataLoader(dataset, batch_size=16),
                     "cpu", len(info["classes"]))
    assert math.isclose(again["validation_loss"], min(losses), rel_tol=1e-4)


def test_the_learning_rate_warms_up_linearly_then_decays_to_zero():
    factor = lr_factor(warmup_steps=4, total_steps=12)
    assert [factor(s) for s in range(4)] == [0.25, 0.5, 0.75, 1.0]
    decay = [factor(s) for s in range(4, 13)]
    assert decay[0] == 1.0 and decay == sorted(decay, reverse=True) and decay[-1] == 0.0
    assert lr_factor(0, 10)(0) == 1.0


def test_early_stopping_waits_patience_epochs_and_keeps_the_best():
    model = torch.nn.Linear(1, 1)
    keeper = BestEpoch(patience=2)
    decisions = []
    for epoch, loss in enumerate([3.0, 2.0, 2.5, float("nan"), 1.0], start=1):
        with torch.no_grad():
            model.weight.fill_(epoch)
        decisions.append(keeper.update(epoch, loss, model))
    assert decisions == [False, False, False, True, False]
    assert keeper.best_epoch == 5 and keeper.best_state["weight"].item() == 5
    assert BestEpoch(patience=1).update(1, float("nan"), model) is True


def test_top5_is_reported_only_with_five_classes_or_more(tmp_path):
    train, val = digits_split(tmp_path / "digits", per_class=8, classes={"0", "1", "2"})
    _, events = run(TrainPyTorchModel, tmp_path / "n", {"epochs": 1},
                    untrained_model=untrained(tmp_path / "resnet"),
                    training_dataset=image_dir(tmp_path / "t", train, small_recipe()),
                    validation_dataset=image_dir(tmp_path / "v", val, small_recipe(), "inference"))
    names = {m[0] for m in metrics(events)}
    assert "validation_top1_accuracy" in names and "validation_top5_accuracy" not in names


def test_it_refuses_a_directory_that_is_not_a_model(tmp_path, inputs):
    with pytest.raises(InvalidModelDirectoryError, match="Untrained model") as refused:
        run(TrainPyTorchModel, tmp_path / "n", FAST, **{**inputs, "untrained_model": inputs["training_dataset"]})
    assert ("must be an UntrainedModelDirectory (a PyTorch model from ResNet or DenseNet) or a ModelDirectory "
            "(a trained model, to fine-tune), got ImageDirectory") in str(refused.value)


def test_the_model_port_says_it_takes_a_trained_model_to_fine_tune():
    port = TrainPyTorchModel.describe()["inputs"][0]
    assert port["label"] == "Untrained model" and port["name"] == "untrained_model"  # stored pipelines link to it
    assert port["accepts"] == ["UntrainedModelDirectory", "ModelDirectory"] and "fine-tune" in port["help"]
    assert "ConvNet as fixed feature extractor" in TrainPyTorchModel.param("freeze_backbone").help
    assert "--freeze-backbone" in training_argv("m", "t", "v", "o", {**TrainPyTorchModel.resolved_params({}),
                                                                     "freeze_backbone": True})
    assert "--freeze-backbone" not in training_argv("m", "t", "v", "o", TrainPyTorchModel.resolved_params({}))


def test_it_refuses_an_unlabeled_dataset(tmp_path, inputs, digits):
    unlabeled = image_dir(tmp_path / "u", digits[0], small_recipe(), unlabeled=True)
    with pytest.raises(NotLabeledDatasetError, match="Training dataset"):
        run(TrainPyTorchModel, tmp_path / "n", FAST, **{**inputs, "training_dataset": unlabeled})


def test_it_refuses_validation_classes_unknown_to_training(tmp_path, inputs, digits):
    strange = image_dir(tmp_path / "s", digits[1], small_recipe(), "inference", relabel={"7": "seven"})
    with pytest.raises(InvalidDatasetError, match="seven"):
        run(TrainPyTorchModel, tmp_path / "n", FAST, **{**inputs, "validation_dataset": strange})


def test_it_refuses_a_batch_larger_than_the_training_set(tmp_path, inputs):
    with pytest.raises(NotInRangeValueError, match=r"Batch size 500 .*\(60 images"):
        run(TrainPyTorchModel, tmp_path / "n", {**FAST, "batch_size": 500}, **inputs)


def test_a_diverging_loss_names_the_step_and_the_learning_rate(tmp_path, inputs):
    with pytest.raises(TrainingDivergedError, match=r"epoch 1, step \d+ of 4; lower the Learning rate"):
        run(TrainPyTorchModel, tmp_path / "n", {**FAST, "learning_rate": 1e11}, **inputs)


def test_a_batch_of_one_tiny_image_is_refused_clearly(tmp_path, inputs):
    with pytest.raises(NotInRangeValueError, match="Batch size 1 is too small for images this size"):
        run(TrainPyTorchModel, tmp_path / "n", {**FAST, "batch_size": 1}, **inputs)


def test_a_last_batch_of_one_image_is_left_out(tmp_path, inputs):
    """60 images in batches of 59: the 60th alone would break BatchNorm."""
    out, events = run(TrainPyTorchModel, tmp_path / "n", {**FAST, "epochs": 1, "batch_size": 59}, **inputs)
    assert out["trained_model"].meta["best_epoch"] == 1


@pytest.mark.parametrize("param", ["epochs", "batch_size", "learning_rate", "patience"])
def test_a_parameter_of_zero_is_refused_naming_it(tmp_path, inputs, param):
    label = TrainPyTorchModel.param(param).label
    with pytest.raises(NotInRangeValueError, match=rf"Train PyTorch Model: parameter '{label}': 0(\.0)? is out of range"):
        run(TrainPyTorchModel, tmp_path / "n", {**FAST, param: 0}, **inputs)
    assert not (tmp_path / "n" / "trained_model" / model_format.TRAINED_STATE).exists()


def _scripted_validation(monkeypatch, losses: list[float]) -> list[dict]:
    """Make training.train.evaluate (training runs in this process) report `losses`, one per epoch,
    and return the list it fills with a copy of the model's weights at each epoch's validation."""
    states = []

    def scripted(model, criterion, data_loader, device, num_classes, *more):
        states.append({k: v.detach().clone() for k, v in model.state_dict().items()})
        return {"validation_loss": losses[len(states) - 1], "validation_top1_accuracy": 0.1 * len(states)}

    monkeypatch.setattr("training.train.evaluate", scripted)
    return states


def test_the_weights_kept_are_those_of_the_best_epoch_not_the_last(tmp_path, inputs, monkeypatch):
    states = _scripted_validation(monkeypatch, [1.0, 0.5, 0.9])
    out, events = run(TrainPyTorchModel, tmp_path / "n", {**FAST, "epochs": 3, "patience": 3}, **inputs)
    assert len(states) == 3
    kept = torch.load(out["trained_model"].path / model_format.TRAINED_STATE, weights_only=True)
    assert kept.keys() == states[1].keys()
    assert all(torch.equal(kept[k], states[1][k]) for k in kept)
    assert not all(torch.equal(kept[k], states[2][k]) for k in kept)  # the last epoch moved on
    spec = yaml.safe_load((out["trained_model"].path / model_format.SPEC_FILE).read_text())
    assert spec["best_epoch"] == 2 and spec["epochs_run"] == 3
    assert spec["validation_loss"] == 0.5 and spec["validation_top1_accuracy"] == pytest.approx(0.2)
    assert out["trained_model"].meta["best_epoch"] == 2
    log = node_log(tmp_path / "n")
    assert "kept the weights of epoch 2 (validation loss 0.5000" in log


def test_early_stopping_ends_the_run_after_patience_epochs_without_improvement(tmp_path, inputs, monkeypatch):
    states = _scripted_validation(monkeypatch, [1.0, 1.1, 1.2, 1.3, 1.4])
    out, events = run(TrainPyTorchModel, tmp_path / "n", {**FAST, "epochs": 5, "patience": 2}, **inputs)
    assert len(states) == 3
    assert sorted({step for name, _, step in metrics(events) if name == "training_loss"}) == [1, 2, 3]
    spec = yaml.safe_load((out["trained_model"].path / model_format.SPEC_FILE).read_text())
    assert spec["epochs_run"] == 3 and spec["best_epoch"] == 1 and len(spec["history"]) == 3
    log = node_log(tmp_path / "n")
    assert "early stopping: the validation loss has not improved for 2 epoch(s) (best 1.0000 at epoch 1)" in log
    assert "Epoch 4:" not in log


def test_it_uses_sgd_with_nesterov_momentum_and_weight_decay_and_warms_up_per_step(tmp_path, inputs, monkeypatch):
    built = []

    class RecordingSGD(torch.optim.SGD):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.step_lrs = []
            built.append(self)

        def step(self, closure=None):
            self.step_lrs.append(self.param_groups[0]["lr"])
            return super().step(closure)

    monkeypatch.setattr(torch.optim, "SGD", RecordingSGD)
    lr = 0.05
    # 60 images in batches of 16: 4 steps per epoch, 8 in all; a warm-up over 10 steps outlasts both epochs
    _, events = run(TrainPyTorchModel, tmp_path / "n", {**FAST, "learning_rate": lr, "warmup_step_number": 10},
                    **inputs)
    assert len(built) == 1
    optimizer = built[0]
    group = optimizer.param_groups[0]
    assert group["momentum"] == 0.9 and group["nesterov"] is True and group["weight_decay"] == 1e-4
    assert optimizer.defaults["lr"] == lr
    assert optimizer.step_lrs == pytest.approx([lr * s / 10 for s in range(1, 9)])
    reported = [value for name, value, _ in metrics(events) if name == "learning_rate"]
    assert reported[0] < lr and reported == pytest.approx([lr * 5 / 10, lr * 9 / 10])


def test_another_random_seed_gives_other_metrics(tmp_path, inputs):
    def figures(seed):
        _, events = run(TrainPyTorchModel, tmp_path / str(seed), {**FAST, "epochs": 1, "random_seed": seed}, **inputs)
        return {name: value for name, value, _ in metrics(events) if name != "training_images_per_second"}

    one, two = figures(1), figures(2)
    assert one["training_loss"] != two["training_loss"] and one["validation_loss"] != two["validation_loss"]


def test_a_cancel_stops_the_training_at_the_end_of_a_step_and_leaves_no_model(tmp_path, inputs):
    events = []

    def cancelled() -> bool:  # the user presses Cancel once the first epoch is reported
        return any(e.type == "metric" and e.data["name"] == "validation_loss" for e in events)

    node = {"id": "train", "kind": TrainPyTorchModel.kind, "parameters": {**FAST, "epochs": 5}}
    with pytest.raises(Cancelled):
        executor.execute(TrainPyTorchModel, node, inputs, tmp_path / "train", events.append, cancelled)
    log = node_log(tmp_path / "train")
    assert "Epoch 1:" in log and "Epoch 2:" not in log and "cancelled by the user" in log
    assert not (tmp_path / "train" / "trained_model").exists()


def test_a_sweep_policy_stop_ends_training_after_the_epoch_and_keeps_the_best_so_far(tmp_path, inputs):
    events = []

    def stop() -> bool:  # the sweep's policy judges the trial a loser once epoch 2 is reported
        return sum(e.type == "metric" and e.data["name"] == "validation_loss" for e in events) >= 2

    node = {"id": "train", "kind": TrainPyTorchModel.kind, "parameters": {**FAST, "epochs": 6, "patience": 6}}
    outputs = executor.execute(TrainPyTorchModel, node, inputs, tmp_path / "train", events.append, stop=stop)
    spec = yaml.safe_load((Path(outputs["trained_model"]) / model_format.SPEC_FILE).read_text())
    assert spec["epochs_run"] == 2 and spec["best_epoch"] in (1, 2)  # a model is written: the best of 2 epochs
    log = node_log(tmp_path / "train")
    assert "early terminated after epoch 2 of 6: the sweep's policy stopped this trial" in log
    assert "Epoch 3:" not in log
    steps = {e.data.get("steps") for e in events if e.type == "metric"}
    assert steps == {6}  # every figure says how many epochs were meant: a policy asks nothing at the last


@pytest.mark.timeout(600)
def test_under_torchrun_every_rank_stops_where_rank_0_reads_the_stop_file(tmp_path, inputs):
    out, stop_file = tmp_path / "model", tmp_path / "STOP"
    stop_file.touch()  # the designer's launcher creates it when the policy says stop
    argv = training_argv(inputs["untrained_model"].path, inputs["training_dataset"].path,
                         inputs["validation_dataset"].path, out, {**TrainPyTorchModel.resolved_params({}), **FAST,
                                                                  "epochs": 4, "batch_size": 8}, threads=1)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OMP_WAIT_POLICY": "PASSIVE", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
                           "-m", "training.train", *argv, "--stop-file", str(stop_file)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=540, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    spec = yaml.safe_load((out / model_format.SPEC_FILE).read_text())
    assert spec["epochs_run"] == 1 and spec["best_epoch"] == 1
    assert "early terminated after epoch 1 of 4" in done.stdout
