"""training/packaging.py: a registered version's folder, downloaded as one .tar.gz, scores images
in a fresh Python with torch, numpy and PIL only, as Score Image Model scores them in the designer."""
import importlib.util
import json
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from PIL import Image

from modules.convert_to_image_directory import ConvertToImageDirectory
from modules.score_image_model import ScoreImageModel
from modules.train_pytorch_model import TrainPyTorchModel
from sdk import preprocess
from sdk.errors import ModuleError
from sdk.formats import model as model_format
from sdk.formats import onnx_model
from sdk.formats import transformation as T
from sdk.formats.meta import artifact, write_meta
from tests.modules.model_helpers import digits_split, image_dir, one_thread, run, untrained  # noqa: F401 - a fixture
from training import models, packaging

pytestmark = pytest.mark.usefixtures("one_thread")
RECIPE = T.make_recipe([T.step("resize", size=36), T.step("center_crop", size=32), T.step("random_horizontal_flip")])
NORMALIZE = [[0.485, 0.456, 0.406], [0.229, 0.224, 0.225]]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A resnet18 trained for one epoch on 60 digits (resize 36, center crop 32)."""
    root = tmp_path_factory.mktemp("packaging")
    train, val = digits_split(root / "digits", per_class=8)
    out, _ = run(TrainPyTorchModel, root / "train", {"epochs": 1, "learning_rate": 0.01},
                 untrained_model=untrained(root / "resnet"), training_dataset=image_dir(root / "t", train, RECIPE),
                 validation_dataset=image_dir(root / "v", val, RECIPE, "inference"))
    return out["trained_model"], val


def new_images(val, folder):
    """Validation digits as a user would send them: gray, RGB, transparent, palette, odd sizes."""
    folder.mkdir(parents=True)
    paths = []
    for i, source in enumerate(sorted(val.rglob("*.png"))[:6]):
        with Image.open(source) as img:
            gray = img.convert("L")
        rgb = Image.merge("RGB", [gray, gray.point(lambda v: v // 2), gray])
        variants = [gray, rgb.resize((45, 33)), rgb.convert("RGBA"), rgb.convert("P", palette=Image.Palette.ADAPTIVE),
                    rgb.resize((29, 51)), gray]
        img = variants[i]
        if img.mode == "RGBA":
            img.putalpha(gray)  # transparent where the digit is not: composited on white, as training did
        paths.append(folder / f"image{i}_{img.mode}.png")
        img.save(paths[-1])
    return paths


def scored_by_the_designer(model_dir, images, node_dir):
    """{file name: probabilities} from Convert to Image Directory + Score Image Model."""
    converted, _ = run(ConvertToImageDirectory, node_dir / "convert", input_dataset=artifact(images[0].parent))
    scored, _ = run(ScoreImageModel, node_dir / "score", trained_model=model_dir, dataset=converted["image_directory"])
    table = pd.read_parquet(scored["scored_dataset"].path / "scored.parquet")
    columns = [c for c in table.columns if c.startswith("Scored Probabilities_")]
    by_stem = {}
    for path, row in zip(table["Image"], table[columns].to_numpy()):
        by_stem[path.rsplit("/", 1)[-1].split("_", 1)[1].rsplit(".", 1)[0]] = row
    return {p.name: by_stem[p.stem] for p in images}


def downloaded(folder, tmp_path):
    """The folder as the download gives it: one .tar.gz, extracted somewhere new."""
    archive = tmp_path / "model-1.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(folder, arcname="model-1")
    target = tmp_path / "extracted"
    with tarfile.open(archive) as tar:
        tar.extractall(target, filter="data")
    return target / "model-1"


DRIVER = """
import json, runpy, sys
sys.argv = [sys.argv[1], *sys.argv[2:]]
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
except SystemExit as e:
    code = e.code
top = {m.split(".")[0] for m in sys.modules}
print(json.dumps({"exit": code, "imported": sorted(top & {"torchvision", "designer", "modules", "training", "sdk", "yaml",
                                                            "onnxruntime", "django", "pandas"})}), file=sys.stderr)
"""


def test_the_downloaded_archive_scores_as_score_image_model_with_torch_only(tmp_path, trained):
    model_dir, val = trained
    version = tmp_path / "models" / "1" / "7" / "1"
    shutil.copytree(model_dir.path, version)
    lines = []
    info = packaging.package(version, log=lines.append)
    assert info["has_onnx"] is True and info["input_size"] == [32, 32] and info["size"] > 40e6
    assert any("model.pt2" in line and "batch size free" in line for line in lines)
    folder = downloaded(version, tmp_path)
    for name in ("model.pt2", "model.onnx", "preprocessing.json", "preprocess.py", "predict.py", "README.txt", "model.pt"):
        assert (folder / name).is_file(), name
    assert "torch.export.load" in (folder / "README.txt").read_text()
    images = new_images(val, tmp_path / "new")
    expected = scored_by_the_designer(model_dir, images, tmp_path)

    # the command itself, run from elsewhere in an isolated Python (no project on sys.path)
    done = subprocess.run([sys.executable, "-I", str(folder / "predict.py"), *map(str, images)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    answer = json.loads(done.stdout)
    assert answer["classes"] == [str(d) for d in range(10)]
    assert [p["image"] for p in answer["predictions"]] == [str(p) for p in images]
    for path, prediction in zip(images, answer["predictions"]):
        got = np.array([prediction["probabilities"][c] for c in answer["classes"]])
        assert np.abs(got - expected[path.name]).max() <= 1e-5, path.name
        assert prediction["label"] == answer["classes"][int(got.argmax())]

    # and what it imported: torch, numpy, PIL; nothing of the designer, not torchvision
    driven = subprocess.run([sys.executable, "-I", "-c", DRIVER, str(folder / "predict.py"), str(images[0])],
                            cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
    report = json.loads(driven.stderr.strip().splitlines()[-1])
    assert report == {"exit": 0, "imported": []}, driven.stderr[-3000:]

    # ONNX Runtime on model.onnx with preprocess.py gives the same probabilities
    import onnxruntime

    spec = importlib.util.spec_from_file_location("archive_preprocess", folder / "preprocess.py")
    archived = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(archived)
    preprocessing = json.loads((folder / "preprocessing.json").read_text())
    prepare = archived.Preprocessor(preprocessing)
    session = onnxruntime.InferenceSession(str(folder / "model.onnx"), providers=["CPUExecutionProvider"])
    batch = prepare.batch([archived.load_image(p.read_bytes()) for p in images])
    logits = session.run([preprocessing["output"]], {preprocessing["input"]: batch})[0]
    probabilities = torch.softmax(torch.from_numpy(logits), dim=1).numpy()
    for path, row in zip(images, probabilities):
        assert np.abs(row - expected[path.name]).max() <= 1e-5, path.name


def test_predict_names_a_file_that_is_not_an_image_and_scores_the_others(tmp_path, trained):
    model_dir, val = trained
    version = tmp_path / "v"
    shutil.copytree(model_dir.path, version)
    packaging.package(version)
    (tmp_path / "notes.png").write_text("not a picture")
    good = sorted(val.rglob("*.png"))[0]
    done = subprocess.run([sys.executable, "-I", str(version / "predict.py"), str(tmp_path / "notes.png"), str(good)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 1
    bad, ok = json.loads(done.stdout)["predictions"]
    assert "not an image" in bad["error"] and "probabilities" not in bad
    assert set(ok["probabilities"]) == {str(d) for d in range(10)}


def synthetic_model(path, model_name, recipe, classes=("cat", "dog", "owl")):
    """A ModelDirectory with random weights: what packaging sees, without a training."""
    torch.manual_seed(0)
    net = models.build_model({"model_name": model_name}, len(classes))
    path.mkdir(parents=True)
    models.write_trained(path, {"model_name": model_name, "pretrained": False}, net.state_dict(),
                         {"classes": list(classes), "transforms": recipe, "normalize": NORMALIZE})
    write_meta(path, model_format.TYPE, {"model_name": model_name, "classes": list(classes)})
    return net.eval()


def load_program(folder):
    return torch.export.load(str(folder / packaging.PROGRAM_FILE)).module()


def test_a_densenet121_packages_with_its_batch_size_free(tmp_path):
    recipe = T.make_recipe([T.step("resize", size=40), T.step("center_crop", size=32)])
    net = synthetic_model(tmp_path / "d", "densenet121", recipe)
    info = packaging.package(tmp_path / "d")
    assert info["input_size"] == [32, 32]
    program = load_program(tmp_path / "d")
    x = torch.rand(5, 3, 32, 32)
    with torch.inference_mode():
        assert (program(x) - net(x)).abs().max() <= 1e-4


def test_without_a_crop_the_program_takes_other_image_sizes(tmp_path):
    net = synthetic_model(tmp_path / "r", "resnet18", T.make_recipe([T.step("resize", size=64)]))
    info = packaging.package(tmp_path / "r")
    assert info["input_size"] is None
    program = load_program(tmp_path / "r")
    with torch.inference_mode():
        for shape in [(1, 3, 64, 85), (3, 3, 100, 64), (2, 3, 64, 64)]:
            x = torch.rand(*shape)
            assert (program(x) - net(x)).abs().max() <= 1e-4, shape


def test_an_onnx_file_from_export_to_onnx_is_kept(tmp_path, capfd):
    synthetic_model(tmp_path / "r", "resnet18", T.make_recipe([T.step("center_crop", size=32)]))
    (tmp_path / "r" / onnx_model.ONNX_FILE).write_bytes(b"exported before")
    lines = []
    capfd.readouterr()
    assert packaging.package(tmp_path / "r", log=lines.append)["has_onnx"] is True
    assert capfd.readouterr().err == ""  # torch logs nothing (it warns of a .pt2 file saved under another name)
    assert (tmp_path / "r" / onnx_model.ONNX_FILE).read_bytes() == b"exported before"
    assert any("kept the model.onnx" in line for line in lines)
    assert json.loads((tmp_path / "r" / onnx_model.PREPROCESSING_FILE).read_text())["example_size"] == [32, 32]


def test_a_transform_preprocess_py_cannot_reproduce_is_refused_naming_the_step(tmp_path):
    jitter = {**T.step("color_jitter"), "random": False}
    synthetic_model(tmp_path / "r", "resnet18", T.make_recipe([T.step("resize", size=32), jitter]))
    with pytest.raises(ModuleError, match=r"^the model's inference transformation cannot be packaged: step 2 \('color_jitter'\)"):
        packaging.package(tmp_path / "r")
    assert not (tmp_path / "r" / packaging.PROGRAM_FILE).exists()


def test_a_folder_that_is_not_a_trained_model_is_refused(tmp_path):
    with pytest.raises(ModuleError, match="does not exist"):
        packaging.package(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModuleError, match="^the registered model must be a ModelDirectory"):
        packaging.package(tmp_path / "empty")


def test_the_readme_and_predict_py_are_the_repository_files(tmp_path):
    synthetic_model(tmp_path / "r", "resnet18", T.make_recipe([T.step("center_crop", size=32)]))
    packaging.package(tmp_path / "r")
    assert (tmp_path / "r" / "preprocess.py").read_bytes() == Path(preprocess.__file__).read_bytes()
    assert (tmp_path / "r" / "predict.py").read_bytes() == packaging.PREDICT_SOURCE.read_bytes()
