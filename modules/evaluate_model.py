from sdk.declarations import EvaluationResults, Module, Port, ScoredDataset
from sdk.errors import NotLabeledDatasetError
from sdk.formats import evaluation
from sdk.formats import scored_dataset as scored
from sdk.formats.scored_dataset import LABEL, SCORED_LABELS

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
        results = {"left": evaluate(read_scored(scored_dataset, self.label, "Scored dataset"))}
        if scored_dataset_to_compare is not None:
            results["right"] = evaluate(read_scored(scored_dataset_to_compare, self.label, "Scored dataset to compare"))
        for side, r in results.items():
            ctx.log(f"{side}: {r['count']} images, accuracy {100 * r['overall']['accuracy']:.2f}%, "
                    f"macro precision {r['overall']['macro_precision']:.4f}, macro recall {r['overall']['macro_recall']:.4f}")
        evaluation.write(ctx, "evaluation_results", results)


def read_scored(artifact, module_label: str, port_label: str):
    """The table of a scored dataset; a dataset without predictions or true labels is refused."""
    table = scored.read(artifact, module_label, port_label)
    if LABEL not in table.columns or table[LABEL].isna().any() or (table[LABEL].astype(str) == "").any():
        raise NotLabeledDatasetError(f"{module_label}: the {port_label} has images without a true label: "
                                     "there is nothing to compare the predictions with")
    return table


def evaluate(table) -> dict:
    from sklearn import metrics

    truth, predicted = table[LABEL].astype(str), table[SCORED_LABELS].astype(str)
    scored_classes = [scored.class_of(c) for c in scored.probability_columns(table.columns)]
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
