"""Complete a registered version's folder so that it runs outside the designer.

The folder is a copy of a trained ModelDirectory (sdk/formats/model.py), maybe already with
model.onnx and preprocessing.json (registered from Export to ONNX). `package(folder)` adds:

    model.pt2          torch.export program, batch size free: torch.export.load(p).module()
    model.onnx         the same network for ONNX Runtime (training/onnx_export.py), unless present
    preprocessing.json classes, inference recipe, normalisation (sdk/formats/onnx_model.py)
    preprocess.py      a copy of sdk/preprocess.py: image bytes -> model input, numpy + PIL only
    predict.py         a copy of training/archive_predict.py: `python predict.py IMAGE...`
    README.txt         how to load it with torch only, or with ONNX Runtime

Each file is written under a temporary name and renamed: a failed packaging leaves none half
written. Errors are ModuleErrors naming the problem.
"""
from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import torch

from sdk import preprocess
from sdk.errors import ModuleError, prefixed
from sdk.formats import meta, onnx_model
from sdk.formats import transformation as recipes
from training import models, onnx_export

LABEL = ""  # messages stand alone: the caller says "packaging failed: ..." (designer/pipelines/registry/service.py)
PROGRAM_FILE = "model.pt2"
PREPROCESS_FILE = "preprocess.py"
PREDICT_FILE = "predict.py"
README_FILE = "README.txt"
PREDICT_SOURCE = Path(__file__).with_name("archive_predict.py")
TOLERANCE = 1e-4


def _quiet(_message: str) -> None:
    pass


def package(folder: Path, log=_quiet) -> dict:
    """Write the files above into `folder`; return {"has_onnx": True, "size": bytes of the folder,
    "input_size": [height, width] or None (free), "seconds": {"pt2": ..., "onnx": ...}}."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ModuleError(prefixed(LABEL, f"the folder {folder} does not exist"))
    model, info = models.load_trained(meta.artifact(folder), LABEL, "registered model")
    preprocessing = _checked_preprocessing(info)
    example = onnx_export.example_input(info)
    fixed = _fixed_size(info)
    seconds = {"pt2": _write_program(folder, model, example, fixed, info, log)}
    onnx_path = folder / onnx_model.ONNX_FILE
    if onnx_path.is_file():
        log(f"kept the {onnx_model.ONNX_FILE} exported by Export to ONNX")
    else:
        started = time.monotonic()
        with _replacing(onnx_path) as tmp:
            difference = onnx_export.export(model, tmp, example, LABEL)
        seconds["onnx"] = round(time.monotonic() - started, 2)
        log(f"exported {onnx_model.ONNX_FILE} (opset {onnx_export.OPSET}) in {seconds['onnx']:.1f} s; "
            f"largest difference from PyTorch {difference:.2e}")
    onnx_model.write_preprocessing(folder, info, (example.shape[2], example.shape[3]))
    _copy(Path(preprocess.__file__), folder / PREPROCESS_FILE)
    _copy(PREDICT_SOURCE, folder / PREDICT_FILE)
    (folder / README_FILE).write_text(readme(info, preprocessing, fixed and list(example.shape[2:])))
    size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    log(f"packaged {info['model_name']} ({len(info['classes'])} classes): {size / 1e6:.1f} MB")
    return {"has_onnx": True, "size": size, "input_size": list(example.shape[2:]) if fixed else None, "seconds": seconds}


def _checked_preprocessing(info: dict) -> dict:
    """The preprocessing.json dict; a recipe preprocess.py cannot reproduce is refused here, once,
    rather than on every request."""
    preprocessing = {"transforms": info.get("transforms"), "normalize": info.get("normalize")}
    try:
        preprocess.Preprocessor(preprocessing)
    except ValueError as e:
        raise ModuleError(prefixed(LABEL, f"the model's inference transformation cannot be packaged: {e}")) from None
    return preprocessing


def _fixed_size(info: dict) -> bool:
    """Whether the inference transform gives every image one size: its last step that sets a size
    is a center crop or a resize to a (height, width) pair."""
    fixed = False
    for s in recipes.active_steps(info.get("transforms"), recipes.INFERENCE):
        if s["op"] == "center_crop" or (s["op"] == "resize" and isinstance(s["size"], (list, tuple)) and len(s["size"]) == 2):
            fixed = True
        elif s["op"] == "resize":
            fixed = False
    return fixed


def _write_program(folder: Path, model, example, fixed: bool, info: dict, log) -> float:
    """model.pt2: batch size free; height and width free too when the transform does not fix them
    (torch.export then takes the sizes the network's shapes allow around the example's)."""
    started = time.monotonic()
    auto = torch.export.Dim.AUTO
    dims = {0: auto} if fixed else {0: auto, 2: auto, 3: auto}
    try:
        program = torch.export.export(model, (example,), dynamic_shapes=(dims,))
    except Exception as e:  # torch.export names the construct it cannot trace
        raise ModuleError(prefixed(LABEL, f"torch.export cannot export {info['model_name']}: "
                                          f"{str(e).splitlines()[0] if str(e) else type(e).__name__}")) from None
    batch = torch.cat([example, example[:1]])  # another batch size than the example's
    with torch.inference_mode():
        difference = float((program.module()(batch) - model(batch)).abs().max())
    if difference > TOLERANCE:
        raise ModuleError(prefixed(LABEL, f"the torch.export program differs from the model by {difference:.2e}"))
    with _replacing(folder / PROGRAM_FILE) as tmp:
        torch.export.save(program, str(tmp))
    took = round(time.monotonic() - started, 2)
    size = "x".join(map(str, example.shape[2:])) if fixed else "free"
    log(f"exported {PROGRAM_FILE} (torch.export, batch size free, image size {size}) in {took:.1f} s")
    return took


class _replacing:
    """`with _replacing(path) as tmp:` write tmp; it becomes `path` only if the block succeeds."""

    def __init__(self, path: Path):
        self.path, self.tmp = path, path.with_name(f".partial-{path.name}")  # same suffix: torch.export.save wants .pt2

    def __enter__(self) -> Path:
        return self.tmp

    def __exit__(self, kind, *_):
        if kind is None:
            os.replace(self.tmp, self.path)
        else:
            self.tmp.unlink(missing_ok=True)


def _copy(source: Path, target: Path) -> None:
    with _replacing(target) as tmp:
        shutil.copyfile(source, tmp)


def readme(info: dict, preprocessing: dict, input_size) -> str:
    classes = ", ".join(map(str, info["classes"]))
    size = (f"{input_size[0]} x {input_size[1]}" if input_size else
            "H x W (the transform does not fix the size: model.onnx takes any, model.pt2 the sizes torch.export allowed)")
    normalize = preprocessing["normalize"]
    normalised = f"normalised with mean {normalize[0]} and std {normalize[1]}" if normalize else "not normalised"
    steps = ", ".join(s["op"] for s in recipes.active_steps(preprocessing["transforms"], recipes.INFERENCE)) or "none"
    return f"""{info['model_name']} image classifier, {len(info['classes'])} classes: {classes}

Score images (needs torch, numpy and Pillow; not torchvision):
    python predict.py IMAGE [IMAGE...]

Load it in your own code with torch only:
    import json, sys, torch
    sys.path.insert(0, "<this folder>")
    from preprocess import Preprocessor, load_image
    model = torch.export.load("model.pt2").module()
    prepare = Preprocessor(json.load(open("preprocessing.json")))
    x = torch.from_numpy(prepare.batch([load_image(open("image.png", "rb").read())]))
    probabilities = torch.softmax(model(x), dim=1)   # columns in the order of "classes" in preprocessing.json

With ONNX Runtime instead of torch (numpy and Pillow too):
    import onnxruntime
    session = onnxruntime.InferenceSession("model.onnx", providers=["CPUExecutionProvider"])
    logits = session.run(["logits"], {{"image": prepare.batch([...])}})[0]   # then a softmax over axis 1

Input: float32, N x 3 x {size}.
Each image as RGB (load_image converts grayscale, transparent and 16-bit images as the training
images were converted), then the inference transform ({steps}), scaled to [0, 1] and {normalised}.

Files: model.pt2 (torch.export), model.onnx, preprocessing.json, preprocess.py, predict.py;
model.pt (state_dict) and model.yaml are the designer's own copy (torchvision {info['model_name']}).
"""
