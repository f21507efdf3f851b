"""A training script in the shape of the original's samples: it logs with azureml.core's Run and
saves the whole model with torch.save into --output_dir, where pytorch_score.py loads it.

Two classes (chicken, turkey) of four synthetic features each: the classes are two clouds of
points, so a few epochs of a small network separate them.
"""
import argparse
import os

import torch
from azureml.core.run import Run
from torch import nn

CLASSES = ["chicken", "turkey"]


def synthetic(n: int, seed: int):
    generator = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, 2, (n,), generator=generator)
    centres = torch.tensor([[1.0, 1.0, -1.0, 0.0], [-1.0, -1.0, 1.0, 0.5]])
    return centres[labels] + 1.2 * torch.randn(n, 4, generator=generator), labels


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--num_epochs", type=int, default=20)
    parser.add_argument("--learning_rate", type=float, default=0.1)
    parser.add_argument("--output_dir", default="outputs")
    args = parser.parse_args()
    run = Run.get_context()
    torch.manual_seed(0)
    x, y = synthetic(256, seed=1)
    val_x, val_y = synthetic(128, seed=2)
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, len(CLASSES)))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.learning_rate, momentum=0.9)
    best = 0.0
    for _ in range(args.num_epochs):
        model.train()
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        model.eval()
        with torch.no_grad():
            acc = float((model(val_x).argmax(1) == val_y).float().mean())
        run.log("loss", float(loss))
        run.log("val_acc", acc)
        if acc >= best:
            best = acc
            os.makedirs(args.output_dir, exist_ok=True)
            torch.save(model, os.path.join(args.output_dir, "model.pt"))  # the whole model, as the original's sample
        run.log("best_val_acc", best)
    print(f"best validation accuracy {best:.3f}; model saved to {args.output_dir}/model.pt")


if __name__ == "__main__":
    main()
