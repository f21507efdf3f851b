import json

from modules.base import (
    EvaluationResults,
    InvalidDatasetError,
    Module,
    NotLabeledDatasetError,
    Port,
    ScoredDataset,
)

RESULTS_FILE = "evaluation.json"
MAX_MATRIX_CLASSES = 29  # the confusion matrix is shown under 30 classes, as in the original


class EvaluateModel(Module):
    """Accuracy, micro and macro precision and recall, a per-class table and a confusion matrix
    of a scored dataset (scikit-learn's metrics); with a second scored dataset, both side by side."""

    kind = "evaluate_model"
    label = "Evaluate Model"
    category = "Model Scoring & Evaluation"
    inputs = [Port("Scored dataset", ScoredDataset),
              Port("Scored dataset to compare", ScoredDataset, optional=True)]
    outputs = [Port("Evaluation results", EvaluationResults)]
    params = []

    def run(self, ctx, scored_dataset, scored_dataset_to_compare=None):
        out = ctx.output_dir("evaluation_results")
        results = {"left": evaluate(read_scored(scored_dataset, self.label, "Scored dataset"))}
        if scored_dataset_to_compare is not None:
            results["right"] = evaluate(read_scored(scored_dataset_to_compare, self.label, "Scored dataset to compare"))
        for side, r in results.items():
            ctx.log(f"{side}: {r['count']} images, accuracy {100 * r['overall']['accuracy']:.2f}%, "
                    f"macro precision {r['overall']['macro_precision']:.4f}, macro recall {r['overall']['macro_recall']:.4f}")
            _write_tables(out, side, r)
        (out / RESULTS_FILE).write_text(json.dumps(results, indent=1))
        ctx.set_meta("evaluation_results", file=RESULTS_FILE, compared=len(results) == 2,
                     accuracy={side: r["overall"]["accuracy"] for side, r in results.items()})


def read_scored(artifact, module_label: str, port_label: str):
    """The table of a scored dataset; a dataset without predictions or true labels is refused."""
    import pandas as pd

    from modules.score_image_model import SCORED_CSV, SCORED_FILE

    path = artifact.path / SCORED_FILE
    if artifact.type != "ScoredDataset" or not (path.is_file() or (artifact.path / SCORED_CSV).is_file()):
        got = artifact.type or "a directory without _meta.yaml"
        raise InvalidDatasetError(f"{module_label}: the {port_label} is not scored (it must come from Score Image "
                                  f"Model and have a Scored Labels column), got {got} ({artifact.path})")
    table = pd.read_parquet(path) if path.is_file() else pd.read_csv(artifact.path / SCORED_CSV, dtype={"Label": str})
    if "Scored Labels" not in table.columns:
        raise InvalidDatasetError(f"{module_label}: the {port_label} has no Scored Labels column: it is not scored")
    if "Label" not in table.columns or table["Label"].isna().any() or (table["Label"].astype(str) == "").any():
        raise NotLabeledDatasetError(f"{module_label}: the {port_label} has images without a true label: "
                                     "there is nothing to compare the predictions with")
    return table


def evaluate(table) -> dict:
    from sklearn import metrics

    truth, predicted = table["Label"].astype(str), table["Scored Labels"].astype(str)
    scored_classes = [c.removeprefix("Scored Probabilities_") for c in table.columns
                      if c.startswith("Scored Probabilities_")]
    classes = scored_classes + sorted(set(truth) - set(scored_classes))
    overall = {"accuracy": metrics.accuracy_score(truth, predicted)}
    for average in ("micro", "macro"):
        p, r, f, _ = metrics.precision_recall_fscore_support(truth, predicted, labels=classes, average=average,
                                                             zero_division=0)
        overall.update({f"{average}_precision": p, f"{average}_recall": r, f"{average}_f1": f})
    p, r, f, support = metrics.precision_recall_fscore_support(truth, predicted, labels=classes, zero_division=0)
    per_class = [{"class": c, "precision": float(p[i]), "recall": float(r[i]), "f1": float(f[i]),
                  "support": int(support[i])} for i, c in enumerate(classes)]
    result = {"count": len(table), "classes": classes, "overall": {k: float(v) for k, v in overall.items()},
              "per_class": per_class}
    if len(classes) <= MAX_MATRIX_CLASSES:
        # rows: true class, columns: predicted class, in the order of `classes`
        result["confusion_matrix"] = metrics.confusion_matrix(truth, predicted, labels=classes).tolist()
    return result


def _write_tables(out, side: str, result: dict) -> None:
    import pandas as pd

    pd.DataFrame(result["per_class"]).to_csv(out / f"per_class_{side}.csv", index=False)
    if "confusion_matrix" in result:
        pd.DataFrame(result["confusion_matrix"], index=result["classes"], columns=result["classes"]).to_csv(
            out / f"confusion_matrix_{side}.csv", index_label="true \\ predicted")
