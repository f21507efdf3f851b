"""ScoredDataset: a table of predictions (written by Score Image Model, read by Evaluate Model
and the Visualize pane).

    <dir>/_meta.yaml       type: ScoredDataset, classes, count, labeled, file: scored.parquet, model_name
    <dir>/scored.parquet   one row per image:
    <dir>/scored.csv       the same table as CSV

        Image        the image file (absolute path)
        Label        its true class ("" when unlabeled)
        Scored Probabilities_<class>   one column per class of the model, in the model's order
        Scored Labels                  the predicted class (the most probable)

pandas is imported inside the functions that need it; `csv_rows` reads the CSV copy without it.
"""
from __future__ import annotations

import csv
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from sdk.errors import InvalidDatasetError, prefixed

SCORED_FILE = "scored.parquet"
SCORED_CSV = "scored.csv"
TYPE = "ScoredDataset"
IMAGE = "Image"
LABEL = "Label"
SCORED_LABELS = "Scored Labels"
PROBABILITY_PREFIX = "Scored Probabilities_"


def probability_column(class_name: str) -> str:
    return f"{PROBABILITY_PREFIX}{class_name}"


def probability_columns(columns) -> list[str]:
    return [c for c in columns if c.startswith(PROBABILITY_PREFIX)]


def class_of(column: str) -> str:
    return column.removeprefix(PROBABILITY_PREFIX)


def table(images: list[str], labels: list[str], classes: list[str], probabilities):
    """The scored table (pandas) of `probabilities` (images x classes, in the order of `classes`)."""
    import pandas as pd

    scored = pd.DataFrame({IMAGE: images, LABEL: labels})
    for i, c in enumerate(classes):
        scored[probability_column(c)] = probabilities[:, i]
    scored[SCORED_LABELS] = [classes[i] for i in probabilities.argmax(axis=1)]
    return scored


def write(ctx, port: str, scored, **meta) -> Path:
    """Write the table (Parquet and CSV) as a ScoredDataset output, with `meta` in its _meta.yaml."""
    out = ctx.output_dir(port)
    scored.to_parquet(out / SCORED_FILE, index=False)
    scored.to_csv(out / SCORED_CSV, index=False)
    ctx.set_meta(port, **meta, file=SCORED_FILE)
    return out


def is_one(directory) -> bool:
    """Whether a folder holds a scored table the Visualize pane can read (its CSV copy)."""
    return (Path(directory) / SCORED_CSV).is_file()


def read(artifact, module_label: str, port_label: str):
    """The table (pandas) of a ScoredDataset input; a directory without predictions is refused
    with an error naming the module and the port."""
    import pandas as pd

    path = Path(artifact.path) / SCORED_FILE
    if artifact.type != TYPE or not (path.is_file() or is_one(artifact.path)):
        got = artifact.type or "a directory without _meta.yaml"
        raise InvalidDatasetError(prefixed(module_label, f"the {port_label} is not scored (it must come from Score "
                                                         f"Image Model and have a Scored Labels column), got {got} ({artifact.path})"))
    scored = pd.read_parquet(path) if path.is_file() else pd.read_csv(Path(artifact.path) / SCORED_CSV, dtype={LABEL: str})
    if SCORED_LABELS not in scored.columns:
        raise InvalidDatasetError(prefixed(module_label, f"the {port_label} has no Scored Labels column: it is not scored"))
    return scored


@dataclass
class Row:
    image: str
    label: str
    scored: str
    probabilities: list[float]


def csv_classes(directory) -> list[str]:
    """The classes of the CSV copy, in the order of its probability columns."""
    with (Path(directory) / SCORED_CSV).open(newline="", encoding="utf-8") as f:
        return [class_of(c) for c in probability_columns(next(csv.reader(f), []))]


def csv_rows(directory) -> Iterator[Row]:
    """The rows of the CSV copy, one at a time, without pandas."""
    with (Path(directory) / SCORED_CSV).open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        columns = probability_columns(reader.fieldnames or [])
        for row in reader:
            yield Row(row.get(IMAGE, ""), row.get(LABEL) or "", row.get(SCORED_LABELS, ""),
                      [float(row[c]) for c in columns])
