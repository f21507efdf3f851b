"""Registered model: a source module that hands a version of one of the user's registered models
to the pipeline, as a trained Model directory (for Score, Evaluate, Export or fine-tuning).

Modules never touch the database, so the folder is found as the Dataset module finds its file
(modules/dataset.py): the user names a model (parameter *Model*) and maybe a version (*Version*,
empty for the latest ready one); when the run is submitted, the server checks that the model
belongs to the run's owner and writes the version's stored folder into *Stored folder*
(designer/pipelines/registry/service.py), replacing whatever the document held there. A pipeline can
therefore never read a folder it does not own. The output holds the model directory's files
(hard-linked, else copied: deleting the version later does not break earlier outputs), not the
packaging extras (model.pt2, model.onnx, predict.py...).
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from sdk.declarations import Int, ModelDirectory, Module, Port, Text
from sdk.errors import InvalidModelDirectoryError
from sdk.formats import model as model_format
from sdk.formats.meta import artifact

# what a trained ModelDirectory is made of (its _meta.yaml is rewritten by the engine from set_meta)
FILES = (model_format.SPEC_FILE, model_format.TRAINED_STATE)


class RegisteredModel(Module):
    """A version of one of your registered models, as a trained model: score or evaluate it on new
    data, export it, or fine-tune it, without training it again."""

    kind = "registered_model"
    label = "Registered model"
    category = "My models"
    outputs = [Port("Trained model", ModelDirectory)]
    params = [
        Text("Model", "", help="name of one of your registered models (the Models page lists them)"),
        Int("Version", None, min=1, help="version number; empty for the latest ready version when the run is submitted"),
        Text("Stored folder", "", help="filled in by the server from Model and Version when the run is submitted",
             filled_by_server=True),
    ]

    def run(self, ctx):
        name, stored = ctx.params["model"], ctx.params["stored_folder"]
        if not stored:
            raise InvalidModelDirectoryError(
                f"{self.label}: no model chosen (parameter 'Model'), or the run was not submitted through the server, "
                "which finds its folder")
        source = Path(stored)
        version = ctx.params["version"]  # the server writes the version it chose when the document left it empty
        which = f"model {name!r} version {version}"
        if not source.is_dir():
            raise InvalidModelDirectoryError(f"{self.label}: the folder of {which} is gone: was the version deleted? "
                                             "Choose another version")
        found = artifact(source)
        spec = model_format.read(found, self.label, f"folder of {which}")
        out = ctx.output_dir("trained_model")
        for file_name in FILES:
            _link_or_copy(source / file_name, out / file_name)
        fields = {k: v for k, v in found.meta.items() if k != "type"}
        ctx.set_meta("trained_model", **{**fields, "model_name": spec["model_name"], "classes": spec["classes"],
                                         "registered_model": name, "registered_version": version})
        ctx.log(f"registered model {name} version {version} ({spec['model_name']}, {len(spec['classes'])} classes)")


def _link_or_copy(source: Path, target: Path) -> None:
    try:
        os.link(source, target)
    except OSError:  # another file system, or links not allowed
        shutil.copyfile(source, target)
