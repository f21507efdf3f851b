"""Train PyTorch Model's checkpoint in the middle of an epoch (Checkpoint every (minutes)): a
training stopped at a step of its 2nd epoch goes on from that step when the node runs again, and
ends with the weights, bit for bit, and the figures of the training that was never stopped (one
process, one thread, augmentations on: a random flip). tests/training/test_resume.py does it with a
worker killed between epochs, through the designer."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

from designer.engine import executor
from designer.engine.executor import Cancelled
from modules.train_pytorch_model import TrainPyTorchModel
from sdk.formats import model as model_format
from sdk.formats.model import TRAINED_STATE
from sdk.layout import CHECKPOINT_FILE, WORK_DIR
from tests.modules.model_helpers import digits_split, image_dir, node_log, one_thread, run, small_recipe, untrained  # noqa: F401
from tests.training.test_resume import figures

pytestmark = pytest.mark.usefixtures("one_thread")
# a checkpoint after every step (a few milliseconds of the 0.4 s of this test's steps)
PARAMS = {"epochs": 2, "batch_size": 8, "learning_rate": 0.05, "print_frequency": 0, "checkpoint_every_minutes": 1e-9}


@pytest.fixture
def inputs(tmp_path):
    train, val = digits_split(tmp_path / "digits", per_class=8)
    return {"untrained_model": untrained(tmp_path / "resnet"),
            "training_dataset": image_dir(tmp_path / "train", train, small_recipe(flip=True), "training"),
            "validation_dataset": image_dir(tmp_path / "val", val, small_recipe(), "inference")}


def test_a_training_stopped_in_the_middle_of_an_epoch_goes_on_from_that_step_and_ends_as_if_never_stopped(tmp_path, inputs):
    whole, _ = run(TrainPyTorchModel, tmp_path / "whole", PARAMS, **inputs)

    node = {"id": "train", "kind": TrainPyTorchModel.kind, "parameters": PARAMS}
    steps = iter(range(10_000))  # the module asks at each step whether to go on: the 12th time, it is told not to
    with pytest.raises(Cancelled):  # (as a lost worker leaves it: its checkpoint where it was)
        executor.execute(TrainPyTorchModel, node, inputs, tmp_path / "stopped", lambda e: None,
                         cancelled=lambda: next(steps) >= 11)
    saved = torch.load(tmp_path / "stopped" / WORK_DIR / CHECKPOINT_FILE, map_location="cpu", weights_only=False)
    assert saved["epoch"] == 1 and saved["in_epoch"]["epoch"] == 2 and 0 < saved["in_epoch"]["step"] < 7, \
        (saved["epoch"], saved["in_epoch"] and saved["in_epoch"]["step"])

    again = executor.execute(TrainPyTorchModel, node, inputs, tmp_path / "stopped", lambda e: None, attempt=2)
    assert f"at step {saved['in_epoch']['step']} of epoch 2" in node_log(tmp_path / "stopped")
    expected, got = whole["trained_model"].path, Path(again["trained_model"])
    expected_state, got_state = (torch.load(p / TRAINED_STATE, map_location="cpu") for p in (expected, got))
    assert [k for k in expected_state if not torch.equal(expected_state[k], got_state[k])] == []
    history = [[figures(h) for h in model_format.read_info(p)["history"]] for p in (expected, got)]
    assert history[0] == history[1] and len(history[0]) == 2
