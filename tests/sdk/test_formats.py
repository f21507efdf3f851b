"""Each port type's format: what its writer writes, its reader reads back; a directory of another
type is refused, naming the module and the port."""
import numpy as np
import pytest

from sdk.errors import InvalidDatasetError, InvalidModelDirectoryError, InvalidTransformationDirectoryError
from sdk.formats import (
    evaluation,
    image_directory,
    meta,
    metrics,
    model,
    onnx_model,
    scored_dataset,
    transformation,
    untrained_model,
)
from tests.sdk.helpers import FakeContext, other


def test_meta_round_trip(tmp_path):
    meta.write_meta(tmp_path, "ImageDirectory", {"classes": ["a", "b"], "count": 2})
    assert meta.read_meta(tmp_path) == {"type": "ImageDirectory", "classes": ["a", "b"], "count": 2}
    got = meta.artifact(tmp_path)
    assert got.path == tmp_path and got.type == "ImageDirectory" and got.meta["count"] == 2
    assert meta.read_meta(tmp_path / "nothing") == {}


def test_image_directory_round_trip(tmp_path):
    ctx = FakeContext(tmp_path / "node", "ImageDirectory")
    recipe = {"version": 1, "mode": "inference", "steps": []}
    image_directory.write(ctx, "images", [("a/1.png", "cat"), ("/abs/2.png", "dog")], transforms=recipe,
                          source_root=tmp_path / "up")
    read = image_directory.read(ctx.finish("images"), "Split Image Directory", "Image directory")
    assert read.items == [(str(tmp_path / "up" / "a/1.png"), "cat"), ("/abs/2.png", "dog")]
    assert read.classes == ["cat", "dog"] and read.labeled and read.transforms == recipe
    assert image_directory.read_path(tmp_path / "node" / "images").items == read.items
    assert image_directory.read_items(tmp_path / "node" / "images") == read.items


def test_image_directory_refuses_another_type(tmp_path):
    with pytest.raises(InvalidDatasetError, match="^Split Image Directory: the Image directory must be an ImageDirectory, "
                                                  "got ScoredDataset"):
        image_directory.read(other(tmp_path, "ScoredDataset"), "Split Image Directory", "Image directory")


def test_transformation_round_trip(tmp_path):
    ctx = FakeContext(tmp_path / "node", "TransformationDirectory")
    recipe = transformation.make_recipe([transformation.step("resize", size=32), transformation.step("random_crop", size=16)])
    transformation.write(ctx, "image_transformation", recipe)
    got = ctx.finish("image_transformation")
    assert got.meta["steps"] == ["resize", "random_crop"]
    assert transformation.read(got, "Apply Image Transformation") == recipe
    assert [s["op"] for s in transformation.active_steps(transformation.inference_recipe(recipe))] == ["resize"]
    assert transformation.output_size(recipe, "For training", 64, 48) == (16, 16)


def test_transformation_refuses_another_type(tmp_path):
    with pytest.raises(InvalidTransformationDirectoryError,
                       match="^Apply Image Transformation: the Image transformation input must be a TransformationDirectory"):
        transformation.read(other(tmp_path), "Apply Image Transformation")


def test_untrained_model_round_trip(tmp_path):
    out = tmp_path / "untrained_model"
    out.mkdir()
    spec = {"family": "resnet", "model_name": "resnet18", "pretrained": False, "weights": None, "kwargs": {}}
    untrained_model.write_spec(out, spec)
    meta.write_meta(out, "UntrainedModelDirectory")
    assert untrained_model.read_spec(meta.artifact(out), "Train PyTorch Model", "Untrained model") == spec
    assert untrained_model.initial_state(out) is None


def test_untrained_model_refuses_another_type(tmp_path):
    with pytest.raises(InvalidModelDirectoryError, match="^Train PyTorch Model: the Untrained model must be an? "
                                                         "UntrainedModelDirectory .*got ImageDirectory"):
        untrained_model.read_spec(other(tmp_path), "Train PyTorch Model", "Untrained model")


def test_model_round_trip(tmp_path):
    out = tmp_path / "trained_model"
    out.mkdir()
    model.write_spec(out, {"model_name": "resnet18", "classes": ["a", "b"], "best_epoch": 2})
    model.weights(out).write_bytes(b"weights")  # torch.save's file, on the torch side
    meta.write_meta(out, "ModelDirectory")
    assert model.read(meta.artifact(out), "Score Image Model")["classes"] == ["a", "b"]
    assert model.read_info(out)["best_epoch"] == 2
    model.weights(out).unlink()
    with pytest.raises(InvalidModelDirectoryError, match="^Score Image Model: the Trained model .* has no weights"):
        model.read(meta.artifact(out), "Score Image Model")


def test_model_refuses_another_type(tmp_path):
    with pytest.raises(InvalidModelDirectoryError, match="^Score Image Model: the Trained model must be a ModelDirectory"):
        model.read(other(tmp_path), "Score Image Model")


def test_scored_dataset_round_trip(tmp_path):
    ctx = FakeContext(tmp_path / "node", "ScoredDataset")
    probabilities = np.array([[0.9, 0.1], [0.3, 0.7]])
    table = scored_dataset.table(["/x/1.png", "/x/2.png"], ["cat", "cat"], ["cat", "dog"], probabilities)
    scored_dataset.write(ctx, "scored_dataset", table, classes=["cat", "dog"])
    got = ctx.finish("scored_dataset")
    assert got.meta["file"] == scored_dataset.SCORED_FILE
    read = scored_dataset.read(got, "Evaluate Model", "Scored dataset")
    assert list(read.columns) == ["Image", "Label", "Scored Probabilities_cat", "Scored Probabilities_dog", "Scored Labels"]
    assert list(read[scored_dataset.SCORED_LABELS]) == ["cat", "dog"]
    assert scored_dataset.csv_classes(got.path) == ["cat", "dog"]
    rows = list(scored_dataset.csv_rows(got.path))
    assert [(r.image, r.label, r.scored, r.probabilities) for r in rows] == [
        ("/x/1.png", "cat", "cat", [0.9, 0.1]), ("/x/2.png", "cat", "dog", [0.3, 0.7])]


def test_scored_dataset_refuses_another_type(tmp_path):
    with pytest.raises(InvalidDatasetError, match="^Evaluate Model: the Scored dataset is not scored .*got ImageDirectory"):
        scored_dataset.read(other(tmp_path), "Evaluate Model", "Scored dataset")


def test_evaluation_round_trip(tmp_path):
    ctx = FakeContext(tmp_path / "node", "EvaluationResults")
    result = {"count": 2, "classes": ["cat", "dog"], "overall": {"accuracy": 0.5},
              "per_class": [{"class": "cat", "precision": 1.0, "recall": 0.5, "f1": 0.67, "support": 2}],
              "confusion_matrix": [[1, 1], [0, 0]]}
    evaluation.write(ctx, "evaluation_results", {"left": result})
    got = ctx.finish("evaluation_results")
    assert evaluation.is_one(got.path) and evaluation.read(got.path) == {"left": result}
    assert got.meta["accuracy"] == {"left": 0.5} and got.meta["compared"] is False
    assert (got.path / evaluation.per_class_file("left")).is_file()
    assert (got.path / evaluation.confusion_matrix_file("left")).is_file()


def test_metrics_round_trip(tmp_path):
    path = tmp_path / metrics.METRICS_FILE
    metrics.append(path, "loss", 0.5, 1)
    metrics.append(path, "loss", 0.25, 2)
    assert metrics.read(path) == [{"name": "loss", "value": 0.5, "step": 1}, {"name": "loss", "value": 0.25, "step": 2}]


def test_onnx_model_round_trip(tmp_path):
    ctx = FakeContext(tmp_path / "node", "OnnxModel")
    onnx_model.model_path(ctx, "onnx_model").write_bytes(b"graph")  # what the exporter writes
    info = {"classes": ["cat", "dog"], "transforms": {"version": 1, "steps": []}, "normalize": [[0.5] * 3, [0.2] * 3],
            "model_name": "resnet18"}
    onnx_model.write(ctx, "onnx_model", info, (32, 24), 17)
    path, preprocessing = onnx_model.read(ctx.finish("onnx_model"), "Score endpoint")
    assert path.read_bytes() == b"graph"
    assert preprocessing == {"classes": ["cat", "dog"], "transforms": {"version": 1, "steps": []},
                             "normalize": [[0.5] * 3, [0.2] * 3], "input": "image", "output": "logits",
                             "example_size": [32, 24]}


def test_onnx_model_refuses_another_type(tmp_path):
    with pytest.raises(InvalidModelDirectoryError, match="^Score endpoint: the ONNX model must be an OnnxModel .*got ModelDirectory"):
        onnx_model.read(other(tmp_path, "ModelDirectory"), "Score endpoint")
