import json

import numpy as np
import pandas as pd
import pytest
import torch

from designer.engine import executor
from modules.evaluate_model import EvaluateModel
from modules.export_to_onnx import ExportToOnnx
from modules.score_image_model import ScoreImageModel
from modules.train_pytorch_model import TrainPyTorchModel
from sdk.errors import InvalidDatasetError, InvalidModelDirectoryError, NotLabeledDatasetError
from sdk.formats import onnx_model as onnx_format
from sdk.formats.image_directory import read_path
from sdk.formats.meta import write_meta
from tests.modules.model_helpers import (  # noqa: F401 - one_thread is a fixture
    artifact,
    digits_split,
    image_dir,
    one_thread,
    run,
    small_recipe,
    untrained,
)
from training import models
from training.data import ImageDirDataset
from training.transforms import build_transform

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A resnet18 trained for one epoch on 60 digits, and its validation set (20 digits)."""
    root = tmp_path_factory.mktemp("scoring")
    train, val = digits_split(root / "digits", per_class=8)
    val_dir = image_dir(root / "val", val, small_recipe(), "inference")
    out, _ = run(TrainPyTorchModel, root / "train", {"epochs": 1, "learning_rate": 0.01},
                 untrained_model=untrained(root / "resnet"),
                 training_dataset=image_dir(root / "t", train, small_recipe(flip=True)), validation_dataset=val_dir)
    return out["trained_model"], val_dir


def test_scores_have_a_probability_per_class_and_a_label(tmp_path, trained):
    model, val = trained
    out, _ = run(ScoreImageModel, tmp_path / "s", trained_model=model, dataset=val)
    scored = out["scored_dataset"]
    assert scored.type == "ScoredDataset"
    table = pd.read_parquet(scored.path / "scored.parquet")
    classes = [str(d) for d in range(10)]
    assert list(table.columns) == ["Image", "Label"] + [f"Scored Probabilities_{c}" for c in classes] + ["Scored Labels"]
    assert len(table) == 20 and set(table["Label"]) == set(classes)
    probs = table[[f"Scored Probabilities_{c}" for c in classes]].to_numpy()
    assert np.allclose(probs.sum(axis=1), 1, atol=1e-5)
    assert list(table["Scored Labels"]) == [classes[i] for i in probs.argmax(axis=1)]
    assert (scored.path / "scored.csv").is_file()


def test_score_refuses_a_directory_that_is_not_a_trained_model(tmp_path, trained):
    _, val = trained
    with pytest.raises(InvalidModelDirectoryError, match="Score Image Model: the Trained model must be a ModelDirectory"):
        run(ScoreImageModel, tmp_path / "s", trained_model=val, dataset=val)


def test_export_names_what_a_model_folder_without_model_yaml_lacks(tmp_path):
    """Issue 29: a script's own model folder (model.pt saved with torch.save) declared a
    ModelDirectory: the error said "must be a ModelDirectory ..., got ModelDirectory"."""
    folder = tmp_path / "script_model"
    folder.mkdir()
    torch.save({"w": torch.zeros(1)}, folder / "model.pt")
    write_meta(folder, "ModelDirectory")
    with pytest.raises(InvalidModelDirectoryError) as refused:
        run(ExportToOnnx, tmp_path / "x", trained_model=artifact(folder))
    message = str(refused.value)
    assert message.startswith(f"Export to ONNX: the Trained model ({folder}) is a ModelDirectory without model.yaml, "
                              f"the file that names its model (model_name), its classes and its transforms"), message
    assert "sdk.formats.model.write writes it" in message and message.endswith("the folder holds _meta.yaml, model.pt")
    assert "got ModelDirectory" not in message


def test_evaluation_uses_sklearn_metrics_and_compares_two_scored_datasets(tmp_path, trained):
    model, val = trained
    scored = run(ScoreImageModel, tmp_path / "s", trained_model=model, dataset=val)[0]["scored_dataset"]
    out, _ = run(EvaluateModel, tmp_path / "e", scored_dataset=scored, scored_dataset_to_compare=scored)
    results = json.loads((out["evaluation_results"].path / "evaluation.json").read_text())
    table = pd.read_parquet(scored.path / "scored.parquet")
    left = results["left"]
    assert results["right"] == left
    assert left["overall"]["accuracy"] == pytest.approx((table["Label"] == table["Scored Labels"]).mean())
    assert left["overall"]["micro_precision"] == pytest.approx(left["overall"]["accuracy"])  # single-label
    assert set(left["overall"]) >= {"macro_precision", "macro_recall", "micro_recall"}
    assert [row["class"] for row in left["per_class"]] == [str(d) for d in range(10)]
    matrix = np.array(left["confusion_matrix"])
    assert matrix.shape == (10, 10) and matrix.sum() == 20 and np.trace(matrix) == round(20 * left["overall"]["accuracy"])
    assert (out["evaluation_results"].path / "confusion_matrix_left.csv").is_file()


def test_evaluation_refuses_a_dataset_that_is_not_scored(tmp_path, trained):
    _, val = trained
    val_as_scored = type(val)(val.path, "ScoredDataset", val.meta)
    with pytest.raises(InvalidDatasetError, match="Evaluate Model: the Scored dataset is not scored"):
        run(EvaluateModel, tmp_path / "e", scored_dataset=val_as_scored)


def _scored_table(path, classes, labels, predicted) -> object:
    path.mkdir(parents=True)
    table = pd.DataFrame({"Image": [f"{i}.png" for i in range(len(labels))], "Label": labels})
    for c in classes:
        table[f"Scored Probabilities_{c}"] = [1.0 if p == c else 0.0 for p in predicted]
    table["Scored Labels"] = predicted
    table.to_parquet(path / "scored.parquet", index=False)
    executor.write_meta(path, "ScoredDataset", {"classes": classes})
    return artifact(path)


def test_the_confusion_matrix_is_left_out_from_30_classes(tmp_path):
    classes = [f"c{i:02d}" for i in range(30)]
    scored = _scored_table(tmp_path / "s", classes, classes, classes[1:] + classes[:1])
    out, _ = run(EvaluateModel, tmp_path / "e", scored_dataset=scored)
    left = json.loads((out["evaluation_results"].path / "evaluation.json").read_text())["left"]
    assert left["overall"]["accuracy"] == 0 and "confusion_matrix" not in left and len(left["per_class"]) == 30


def test_evaluation_refuses_a_scored_dataset_without_true_labels(tmp_path):
    scored = _scored_table(tmp_path / "s", ["a", "b"], ["a", ""], ["a", "b"])
    with pytest.raises(NotLabeledDatasetError, match="without a true label"):
        run(EvaluateModel, tmp_path / "e", scored_dataset=scored)


def test_onnx_export_matches_pytorch_on_the_validation_images(tmp_path, trained):
    import onnxruntime

    model_dir, val = trained
    out, _ = run(ExportToOnnx, tmp_path / "x", trained_model=model_dir)
    onnx_model = out["onnx_model"]
    assert onnx_model.type == "OnnxModel" and onnx_model.meta["classes"] == [str(d) for d in range(10)]
    model, info = models.load_trained(model_dir, "test")
    preprocessing = json.loads((onnx_model.path / onnx_format.PREPROCESSING_FILE).read_text())
    transform = build_transform(preprocessing["transforms"], None, tuple(map(tuple, preprocessing["normalize"])))
    images = torch.stack([x for x, _ in ImageDirDataset(read_path(val.path), info["classes"], transform)])
    session = onnxruntime.InferenceSession(str(onnx_model.path / onnx_format.ONNX_FILE), providers=["CPUExecutionProvider"])
    got = session.run(None, {"image": images.numpy()})[0]
    with torch.inference_mode():
        expected = model(images).numpy()
    assert got.shape == (20, 10)
    assert np.abs(got - expected).max() < 1e-4


def test_two_different_scored_datasets_are_evaluated_side_by_side_with_known_figures(tmp_path):
    classes = ["a", "b", "c"]
    left = _scored_table(tmp_path / "l", classes, ["a", "a", "a", "b", "b", "c"], ["a", "a", "b", "b", "c", "c"])
    right = _scored_table(tmp_path / "r", classes, ["a", "b", "c", "c"], ["a", "a", "c", "c"])
    out, _ = run(EvaluateModel, tmp_path / "e", scored_dataset=left, scored_dataset_to_compare=right)
    results = json.loads((out["evaluation_results"].path / "evaluation.json").read_text())
    assert results["left"] != results["right"]
    assert out["evaluation_results"].meta["accuracy"] == {"left": pytest.approx(4 / 6), "right": 0.75}

    overall = results["left"]["overall"]
    assert overall["accuracy"] == pytest.approx(4 / 6)
    assert overall["micro_precision"] == pytest.approx(4 / 6) and overall["micro_recall"] == pytest.approx(4 / 6)
    assert overall["macro_precision"] == pytest.approx((1 + 1 / 2 + 1 / 2) / 3)
    assert overall["macro_recall"] == pytest.approx((2 / 3 + 1 / 2 + 1) / 3)
    per_class = {row["class"]: row for row in results["left"]["per_class"]}
    assert {c: (r["precision"], r["recall"], r["support"]) for c, r in per_class.items()} == {
        "a": (1.0, pytest.approx(2 / 3), 3), "b": (0.5, 0.5, 2), "c": (0.5, 1.0, 1)}
    assert results["left"]["confusion_matrix"] == [[2, 1, 0], [0, 1, 1], [0, 0, 1]]  # rows: truth, columns: predicted

    overall = results["right"]["overall"]
    assert overall["accuracy"] == 0.75 and overall["micro_precision"] == 0.75 and overall["micro_recall"] == 0.75
    assert overall["macro_precision"] == pytest.approx((1 / 2 + 0 + 1) / 3)  # b is never predicted: 0
    assert overall["macro_recall"] == pytest.approx((1 + 0 + 1) / 3)
    assert [(r["class"], r["support"]) for r in results["right"]["per_class"]] == [("a", 1), ("b", 1), ("c", 2)]
    assert results["right"]["confusion_matrix"] == [[1, 0, 0], [1, 0, 0], [0, 0, 2]]
    matrix = pd.read_csv(out["evaluation_results"].path / "confusion_matrix_right.csv", index_col=0)
    assert matrix.loc["b", "a"] == 1 and list(matrix.columns) == classes


def test_score_refuses_a_dataset_that_is_not_an_image_directory(tmp_path, trained):
    model, _ = trained
    with pytest.raises(InvalidDatasetError, match="Score Image Model: the Dataset must be an ImageDirectory, got ModelDirectory"):
        run(ScoreImageModel, tmp_path / "s", trained_model=model, dataset=model)
