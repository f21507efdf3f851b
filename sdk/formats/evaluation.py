"""EvaluationResults: metrics of a scored dataset (written by Evaluate Model, read by the
Visualize pane). One side per scored dataset: "left", and "right" when two were compared.

    <dir>/_meta.yaml                  type: EvaluationResults, file, compared, accuracy: {side: ...}
    <dir>/evaluation.json             {side: {"count": N, "classes": [...],
                                              "overall": {"accuracy", "micro_precision", ...},
                                              "per_class": [{"class", "precision", "recall", "f1", "support"}],
                                              "confusion_matrix": [[...]]}}   # rows: true, columns: predicted
    <dir>/per_class_<side>.csv        the per-class table of a side
    <dir>/confusion_matrix_<side>.csv its confusion matrix (only under 30 classes)
"""
from __future__ import annotations

import json
from pathlib import Path

RESULTS_FILE = "evaluation.json"
TYPE = "EvaluationResults"


def per_class_file(side: str) -> str:
    return f"per_class_{side}.csv"


def confusion_matrix_file(side: str) -> str:
    return f"confusion_matrix_{side}.csv"


def write(ctx, port: str, results: dict) -> Path:
    """Write {side: result} (the JSON, and each side's tables as CSV) as an EvaluationResults output."""
    import pandas as pd

    out = ctx.output_dir(port)
    for side, result in results.items():
        pd.DataFrame(result["per_class"]).to_csv(out / per_class_file(side), index=False)
        if "confusion_matrix" in result:
            pd.DataFrame(result["confusion_matrix"], index=result["classes"], columns=result["classes"]).to_csv(
                out / confusion_matrix_file(side), index_label="true \\ predicted")
    (out / RESULTS_FILE).write_text(json.dumps(results, indent=1))
    ctx.set_meta(port, file=RESULTS_FILE, compared=len(results) == 2,
                 accuracy={side: r["overall"]["accuracy"] for side, r in results.items()})
    return out


def is_one(directory) -> bool:
    return (Path(directory) / RESULTS_FILE).is_file()


def read(directory) -> dict:
    """{side: result} of an EvaluationResults folder."""
    return json.loads((Path(directory) / RESULTS_FILE).read_text())
