"""Objects of a user that the API's paths of datasets can name, for tests/pipelines/test_openapi.py's fuzzing."""
from __future__ import annotations

import io
import zipfile

import yaml
from django.core.files.uploadedfile import SimpleUploadedFile
from PIL import Image

from designer.pipelines.catalogue import components
from designer.pipelines.datasets import service as datasets

COMPONENT = {
    "kind": "fuzzed_train", "label": "Fuzzed Train", "category": "My components", "version": 1,
    "description": "trains a thing", "metrics": ["training_loss"],
    "command": "python train.py --data {inputs.data} --epochs {params.epochs} --out {outputs.model}",
    "inputs": {"data": {"type": "ImageDirectory", "label": "Data"}},
    "outputs": {"model": {"type": "ModelDirectory", "label": "Model"}},
    "params": {"epochs": {"type": "int", "default": 2, "min": 1, "help": "how many"}},
}


def _images_zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        for cls in ("cats", "dogs"):
            png = io.BytesIO()
            Image.new("RGB", (8, 8), (99, 40, 20)).save(png, "PNG")
            z.writestr(f"pets/{cls}/0.png", png.getvalue())
    return buffer.getvalue()


def objects(user) -> dict[str, dict]:
    """{first path segment after /api/: {path parameter: value}} of objects made here for `user`:
    a dataset (stored as an upload is, no worker involved) and a component's first version (its
    component.yaml alone, stored as the API stores one)."""
    ds = datasets.store(user, "fuzzed pets", SimpleUploadedFile("pets.zip", _images_zip()))
    row = components.store(user, [SimpleUploadedFile("component.yaml", yaml.safe_dump(COMPONENT).encode())])
    return {"datasets": {"pk": ds.pk}, "components": {"kind": row.kind, "version": row.version}}
