"""A real digits run (trained in this process) for the model registry's tests, and ways to read it."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
from django.core.files import File

from designer.pipelines.datasets import service as datasets
from designer.pipelines.models import Pipeline, Run
from designer.pipelines.runs import service as runs
from sdk.formats import scored_dataset
from tests.conftest import ROOT, wait_for_run
from tests.imagesets import digits_folder, make_archive
from tests.pipes import link, node, out_path

EPOCHS = 2


def add_digits(owner, tmp_path: Path, name: str = "digits", classes: dict | None = None) -> int:
    """A dataset of 12 images per digit; `classes` renames and selects sub-folders ({"0": "zero", ...})."""
    folder = digits_folder(tmp_path / f"{name}-images", per_class=12)
    if classes is not None:
        for sub in list(folder.iterdir()):
            if sub.name in classes:
                sub.rename(folder / classes[sub.name])
            else:
                shutil.rmtree(sub)
    archive = make_archive(folder, tmp_path / f"{name}.zip")
    with archive.open("rb") as f:
        return datasets.store(owner, name, File(f, name=archive.name)).id


def digits_doc(dataset_id: int, seed: int = 1, export: bool = True) -> dict:
    """examples/digits.json, 2 short epochs, with an Export to ONNX of the trained model."""
    doc = json.loads((ROOT / "examples" / "digits.json").read_text())
    for n in doc["nodes"]:
        if n["id"] == "dataset":
            n["parameters"]["dataset"] = dataset_id
        if n["id"] == "train":
            n["parameters"].update({"epochs": EPOCHS, "batch_size": 16, "warmup_step_number": 0, "random_seed": seed,
                                    "learning_rate": 0.05})
        if n["id"] == "transform":
            n["parameters"]["size"] = 32
    if export:
        doc["nodes"].append(node("export", "export_to_onnx"))
        doc["links"].append(link("train", "export", "trained_model", "trained_model", lid="l-export"))
    return doc


def run_inline(owner, doc: dict, name: str = "digits") -> Run:
    """The run, in this process; a node that a live worker (a session's shared one) claimed first is
    left to it (launchers/inline.py): wait for the run to end."""
    pipeline, _ = Pipeline.objects.get_or_create(owner=owner, name=name, defaults={"draft": doc})
    run = wait_for_run(runs.submit(owner, doc, pipeline=pipeline, inline=True).pk, timeout=600)
    failed = {nr.node_id: nr.error for nr in run.nodes.all() if nr.status not in ("completed", "reused")}
    assert run.status == "completed" and not failed, failed
    return run


def scored_table(run: Run, node_id: str = "score") -> pd.DataFrame:
    folder = out_path(run.nodes.get(node_id=node_id).outputs["scored_dataset"])
    table = pd.read_parquet(folder / "scored.parquet")
    table[scored_dataset.IMAGE] = [Path(p).name for p in table[scored_dataset.IMAGE]]
    return table.sort_values([scored_dataset.LABEL, scored_dataset.IMAGE]).reset_index(drop=True)
