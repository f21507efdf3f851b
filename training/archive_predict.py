"""Score images with this model, with torch, numpy and PIL only (no torchvision, no designer):

    python predict.py IMAGE [IMAGE...]

prints JSON: {"classes", "predictions": [{"image", "label", "probabilities": {class: p}}]},
one prediction per image in the order given ({"image", "error"} for a file that is not a usable
image; the exit status is then 1). The model is model.pt2 (torch.export) beside this file; images
are prepared by preprocess.py, also beside it, as the model's training prepared them.

This file is copied into every model archive the designer builds (training/packaging.py): it
imports nothing of the designer.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch

HERE = Path(__file__).resolve().parent
PROGRAM_FILE = "model.pt2"
PREPROCESSING_FILE = "preprocessing.json"
BATCH = 64

sys.path.insert(0, str(HERE))  # preprocess.py, beside this file (python -I leaves the script's folder out)
if TYPE_CHECKING:  # that copy's original, for the type checker: an archive holds no sdk
    from sdk.preprocess import BadImage, Preprocessor, load_image
else:
    from preprocess import BadImage, Preprocessor, load_image


def load(folder: Path = HERE):
    """(the model as a torch module, the Preprocessor, preprocessing.json as a dict)."""
    preprocessing = json.loads((folder / PREPROCESSING_FILE).read_text())
    model = torch.export.load(str(folder / PROGRAM_FILE)).module()
    return model, Preprocessor(preprocessing), preprocessing


def predict(paths: list[str], folder: Path = HERE) -> dict:
    model, preprocessor, preprocessing = load(folder)
    classes = preprocessing["classes"]
    results: list[dict] = [{"image": p} for p in paths]
    inputs: dict[tuple, list[tuple[int, np.ndarray]]] = {}  # images of one size go through together
    for i, path in enumerate(paths):
        try:
            array = preprocessor(load_image(Path(path).read_bytes()))
        except (OSError, BadImage) as e:
            results[i]["error"] = str(e)
            continue
        inputs.setdefault(array.shape, []).append((i, array))
    for shape, items in inputs.items():
        for start in range(0, len(items), BATCH):
            chunk = items[start:start + BATCH]
            try:
                probabilities = _probabilities(model, np.stack([a for _, a in chunk]))
            except Exception as e:  # a size the exported program does not take: say which
                for i, _ in chunk:
                    results[i]["error"] = (f"model.pt2 does not take a {' x '.join(map(str, shape))} input "
                                           f"({str(e).splitlines()[0]}); model.onnx does")
                continue
            for (i, _), row in zip(chunk, probabilities):
                results[i]["label"] = classes[int(row.argmax())]
                results[i]["probabilities"] = {c: float(p) for c, p in zip(classes, row)}
    return {"classes": classes, "predictions": results}


def _probabilities(model, batch: np.ndarray) -> np.ndarray:
    with torch.inference_mode():
        return torch.softmax(model(torch.from_numpy(batch)), dim=1).numpy()


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if argv else 2
    answer = predict(argv)
    print(json.dumps(answer, indent=1))
    return 1 if any("error" in p for p in answer["predictions"]) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
