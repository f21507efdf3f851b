"""A training script in the shape of Azure ML's v2 samples: MLflow logging, and the model kept only
by mlflow.pytorch.log_model (an MLflow model: MLmodel, the pickled model, its requirements).

Two classes (chicken, turkey) of four synthetic features each. The model's class is defined here,
in the script: MLflow pickles it by value (cloudpickle), so the endpoint loads it without this file.
"""
import argparse

import mlflow
import torch
from torch import nn

CLASSES = ["chicken", "turkey"]


class Classifier(nn.Module):
    def __init__(self, features: int = 4, hidden: int = 16):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, len(CLASSES)))

    def forward(self, x):
        return torch.softmax(self.layers(x), dim=1)  # probabilities of chicken, turkey


def synthetic(n: int, seed: int):
    generator = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, 2, (n,), generator=generator)
    centres = torch.tensor([[1.0, 1.0, -1.0, 0.0], [-1.0, -1.0, 1.0, 0.5]])
    return centres[labels] + 1.2 * torch.randn(n, 4, generator=generator), labels


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--num_epochs", type=int, default=20)
    parser.add_argument("--learning_rate", type=float, default=0.1)
    args = parser.parse_args()
    torch.manual_seed(0)
    x, y = synthetic(256, seed=1)
    val_x, val_y = synthetic(128, seed=2)
    model = Classifier()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.learning_rate, momentum=0.9)
    with mlflow.start_run():
        mlflow.log_params({"num_epochs": args.num_epochs, "learning_rate": args.learning_rate})
        for epoch in range(1, args.num_epochs + 1):
            model.train()
            optimizer.zero_grad()
            loss = nn.functional.nll_loss(torch.log(model(x) + 1e-9), y)
            loss.backward()
            optimizer.step()
            model.eval()
            with torch.no_grad():
                acc = float((model(val_x).argmax(1) == val_y).float().mean())
            mlflow.log_metrics({"loss": float(loss), "val_acc": acc}, step=epoch)
        mlflow.pytorch.log_model(model, "model")
    print(f"validation accuracy {acc:.3f}; MLflow model logged")


if __name__ == "__main__":
    main()
