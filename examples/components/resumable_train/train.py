"""A training loop that goes on from its own checkpoint: the pattern for any script run as a
component. At the end of each epoch it saves everything the next epoch needs into
$DESIGNER_CHECKPOINT_DIR (written to a temporary name, then renamed: a kill during the save leaves
the previous checkpoint whole); when it starts and finds one there, it loads it and goes on. The
designer keeps that folder across attempts (in the artifact store while the node runs, so that
another machine can go on from it) and sets $DESIGNER_ATTEMPT. Runs by hand too: without the
variables, it checkpoints into ./checkpoints."""
import argparse
import json
import os
import time
from pathlib import Path

import torch
from torch import nn

from sdk import log_metric

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=20)
parser.add_argument("--learning_rate", type=float, default=0.05)
parser.add_argument("--pause", type=float, default=0.0)
parser.add_argument("--output_dir", default="outputs")
args = parser.parse_args()

checkpoints = Path(os.environ.get("DESIGNER_CHECKPOINT_DIR", "checkpoints"))
checkpoints.mkdir(parents=True, exist_ok=True)
checkpoint = checkpoints / "last.pt"
attempt = int(os.environ.get("DESIGNER_ATTEMPT", "1"))

torch.manual_seed(0)
x = torch.randn(512, 8)
y = x @ torch.linspace(-1, 1, 8) + 0.1 * torch.randn(512)
model = nn.Linear(8, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=args.learning_rate, momentum=0.9)
start, history = 1, []
if checkpoint.is_file():
    state = torch.load(checkpoint, weights_only=False)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    torch.set_rng_state(state["rng"])
    start, history = state["epoch"] + 1, state["history"]
    print(f"attempt {attempt}: resumed from {checkpoint} after epoch {state['epoch']}", flush=True)

for epoch in range(start, args.epochs + 1):
    order = torch.randperm(len(x))
    for i in range(0, len(x), 64):
        batch = order[i:i + 64]
        loss = nn.functional.mse_loss(model(x[batch]).squeeze(1), y[batch])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    with torch.no_grad():
        epoch_loss = nn.functional.mse_loss(model(x).squeeze(1), y).item()
    history.append({"epoch": epoch, "loss": epoch_loss, "attempt": attempt})
    log_metric("loss", epoch_loss, step=epoch)
    print(f"epoch {epoch}: loss {epoch_loss:.5f}", flush=True)
    tmp = checkpoint.with_suffix(".tmp")
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "rng": torch.get_rng_state(),
                "epoch": epoch, "history": history}, tmp)
    os.replace(tmp, checkpoint)
    time.sleep(args.pause)

out = Path(args.output_dir)
out.mkdir(parents=True, exist_ok=True)
torch.save(model.state_dict(), out / "model.pt")
(out / "history.json").write_text(json.dumps(history, indent=1))
