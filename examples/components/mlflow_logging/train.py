"""Logistic regression on a synthetic two-class set, logging with MLflow as today's original's
samples do. Runs unchanged in the designer (its `mlflow`, where the worker has none, records the
node's metrics) and anywhere MLflow is installed."""
import argparse
import json
import math
import os
import random

import mlflow


def make_data(n, seed):
    rng = random.Random(seed)
    points = []
    for i in range(n):
        label = i % 2
        points.append(((rng.gauss(1.0 if label else -1.0, 1.0), rng.gauss(0.5 if label else -0.5, 1.0)), label))
    return points


def predict(w, b, x):
    z = w[0] * x[0] + w[1] * x[1] + b
    return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z))))


parser = argparse.ArgumentParser()
parser.add_argument("--num_epochs", type=int, default=5)
parser.add_argument("--learning_rate", type=float, default=0.1)
parser.add_argument("--output_dir", default="outputs")
args = parser.parse_args()

mlflow.autolog()
with mlflow.start_run():
    mlflow.log_params({"num_epochs": args.num_epochs, "learning_rate": args.learning_rate})
    mlflow.set_tag("model", "logistic regression")
    train, val = make_data(400, seed=1), make_data(200, seed=2)
    w, b, best_acc = [0.0, 0.0], 0.0, 0.0
    for epoch in range(1, args.num_epochs + 1):
        loss = 0.0
        for x, y in train:
            p = predict(w, b, x)
            loss -= math.log(p if y else 1.0 - p + 1e-12)
            w = [w[0] - args.learning_rate * (p - y) * x[0], w[1] - args.learning_rate * (p - y) * x[1]]
            b -= args.learning_rate * (p - y)
        acc = sum((predict(w, b, x) >= 0.5) == y for x, y in val) / len(val)
        best_acc = max(best_acc, acc)
        mlflow.log_metrics({"loss": loss / len(train), "val_acc": acc}, step=epoch)
        mlflow.log_metric("best_val_acc", best_acc)  # no step: numbered as it comes (1, 2, 3...)
        print(f"epoch {epoch}/{args.num_epochs}: loss {loss / len(train):.4f} val_acc {acc:.4f}", flush=True)
    os.makedirs(args.output_dir, exist_ok=True)
    with open(os.path.join(args.output_dir, "model.json"), "w") as f:
        json.dump({"w": w, "b": b, "best_val_acc": best_acc}, f)
