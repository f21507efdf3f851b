"""Registered model: a source module handing a registered version's model directory to the
pipeline (the server fills in *Stored folder* at submit, as it does for Dataset's *Stored file*)."""
import os

import pandas as pd
import pytest
import torch

from modules.registered_model import RegisteredModel
from modules.score_image_model import ScoreImageModel
from sdk.errors import InvalidModelDirectoryError
from sdk.formats import model as model_format
from sdk.formats import transformation as T
from sdk.formats.meta import write_meta
from tests.modules.model_helpers import one_thread, run  # noqa: F401 - a fixture
from tests.modules.runner import log_text
from training import models

pytestmark = pytest.mark.usefixtures("one_thread")
CLASSES = [str(d) for d in range(10)]


def registered_version(folder, model_name="resnet18"):
    """A version's folder as registering leaves it: a trained model directory plus packaging extras."""
    torch.manual_seed(0)
    net = models.build_model({"model_name": model_name}, len(CLASSES))
    folder.mkdir(parents=True)
    models.write_trained(folder, {"model_name": model_name, "pretrained": False}, net.state_dict(),
                         {"classes": CLASSES, "transforms": T.make_recipe([T.step("resize", size=32)]),
                          "normalize": [[0.485, 0.456, 0.406], [0.229, 0.224, 0.225]], "best_epoch": 3})
    write_meta(folder, model_format.TYPE, {"model_name": model_name, "classes": CLASSES, "best_epoch": 3,
                                           "validation_top1_accuracy": 0.8})
    for extra in ("model.pt2", "model.onnx", "preprocessing.json", "predict.py", "preprocess.py", "README.txt"):
        (folder / extra).write_text("packaging")
    return folder


def params(folder, version=2, name="digits"):
    return {"model": name, "version": version, "stored_folder": str(folder)}


def test_it_outputs_the_versions_model_directory_and_says_which(tmp_path):
    version = registered_version(tmp_path / "models" / "1" / "5" / "2")
    out, _ = run(RegisteredModel, tmp_path / "node", params(version))
    model = out["trained_model"]
    assert model.type == "ModelDirectory"
    assert sorted(p.name for p in model.path.iterdir()) == ["_meta.yaml", "model.pt", "model.yaml"]
    for name in ("model.pt", "model.yaml"):  # hard links: no second copy of the weights on disk
        assert os.path.samefile(model.path / name, version / name)
    assert {k: model.meta[k] for k in ("model_name", "classes", "registered_model", "registered_version", "best_epoch")} == {
        "model_name": "resnet18", "classes": CLASSES, "registered_model": "digits", "registered_version": 2, "best_epoch": 3}
    assert "registered model digits version 2 (resnet18, 10 classes)" in log_text(tmp_path / "node")
    # the version's own _meta.yaml is not touched by the engine writing the output's
    assert (version / "_meta.yaml").read_text().count("registered") == 0


def test_score_gives_the_same_table_from_the_registered_model_as_from_the_original(tmp_path, digits_imagedir):
    from sdk.formats.meta import artifact

    version = registered_version(tmp_path / "v" / "1")
    out, _ = run(RegisteredModel, tmp_path / "node", params(version, version=1))
    digits = artifact(digits_imagedir)
    from_registered, _ = run(ScoreImageModel, tmp_path / "s1", trained_model=out["trained_model"], dataset=digits)
    from_original, _ = run(ScoreImageModel, tmp_path / "s2", trained_model=artifact(version), dataset=digits)
    tables = [pd.read_parquet(o["scored_dataset"].path / "scored.parquet") for o in (from_registered, from_original)]
    pd.testing.assert_frame_equal(*tables)


def test_a_node_without_a_stored_folder_says_no_model_was_chosen(tmp_path):
    with pytest.raises(InvalidModelDirectoryError, match="Registered model: no model chosen .parameter 'Model'."):
        run(RegisteredModel, tmp_path / "node", {"model": "digits", "version": 2, "stored_folder": ""})


def test_a_deleted_versions_node_fails_naming_the_version(tmp_path):
    with pytest.raises(InvalidModelDirectoryError,
                       match="Registered model: the folder of model 'digits' version 3 is gone: was the version deleted"):
        run(RegisteredModel, tmp_path / "node", params(tmp_path / "models" / "3", version=3))


def test_a_folder_that_is_not_a_trained_model_is_refused(tmp_path):
    folder = tmp_path / "models" / "4"
    folder.mkdir(parents=True)
    write_meta(folder, "ImageDirectory")
    with pytest.raises(InvalidModelDirectoryError, match="Registered model: the folder of model 'digits' version 4 must be a "
                                                         "ModelDirectory"):
        run(RegisteredModel, tmp_path / "node", params(folder, version=4))
