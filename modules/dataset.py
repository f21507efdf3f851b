"""Dataset: a source module that hands one of the user's uploaded datasets to the pipeline.

Modules never touch the database, so the file is found this way: the user picks a dataset (parameter
*Dataset*: a picker of their datasets in the page, kept as the dataset's id); when the run is submitted, the server checks that the dataset belongs
to the run's owner and writes its stored path into *Stored file* (designer/pipelines/datasets/service.py,
`bind`), replacing whatever the document held there. A pipeline can therefore never name a file
it does not own. The output holds the file (hard-linked, else copied: deleting the dataset later
does not break earlier outputs) and `file: <name>` in its `_meta.yaml`.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from sdk.declarations import Int, Module, Port, Text, UploadedFile
from sdk.errors import InvalidDatasetError


class Dataset(Module):
    """One of your uploaded datasets (an archive of images), for Convert to Image Directory."""

    kind = "dataset"
    label = "Dataset"
    category = "Datasets"
    outputs = [Port("Dataset", UploadedFile)]
    params = [
        Int("Dataset", None, min=1, help="one of your uploaded datasets (upload one under My datasets in the palette)"),
        Text("Stored file", "", help="filled in by the server from the Dataset id when the run is submitted",
             filled_by_server=True),
    ]

    def run(self, ctx):
        dataset_id, stored = ctx.params["dataset"], ctx.params["stored_file"]
        if not stored:
            raise InvalidDatasetError(f"{self.label}: no dataset chosen (parameter 'Dataset'), or the run was not "
                                      "submitted through the server, which finds its file")
        source = Path(stored)
        if not source.is_file():
            raise InvalidDatasetError(f"{self.label}: the file of dataset {dataset_id} is gone ({source.name}): "
                                      "was the dataset deleted? Upload it again and choose it")
        target = ctx.output_dir("dataset") / source.name
        try:
            os.link(source, target)
        except OSError:  # another file system, or links not allowed
            shutil.copyfile(source, target)
        ctx.set_meta("dataset", file=source.name, dataset_id=dataset_id, size=target.stat().st_size)
        ctx.log(f"dataset {dataset_id}: {source.name} ({target.stat().st_size} bytes)")
