import argparse
import os
import time
from pathlib import Path

from azureml.core import Run

parser = argparse.ArgumentParser()
parser.add_argument("--learning_rate", type=float, required=True)
parser.add_argument("--epochs", type=int, required=True)
parser.add_argument("--epoch_seconds", type=float, required=True)
parser.add_argument("--out", required=True)
args = parser.parse_args()

run = Run.get_context()
quality = min(1.0, args.learning_rate * 100)
best = 0.0
for epoch in range(1, args.epochs + 1):
    time.sleep(args.epoch_seconds)
    score = quality * (1 - 0.5 / epoch)
    best = max(best, score)
    run.log("score", score)
    if int(os.environ.get("RANK", "0")) == 0:  # one writer, as DDP scripts save: two ranks renaming one file race
        Path(args.out, "value.tmp").write_text(f"{best}")  # what it has so far, kept (whole) if it is ended
        os.replace(Path(args.out, "value.tmp"), Path(args.out, "value.txt"))
    print(f"epoch {epoch}: score {score:.6f}", flush=True)
print(f"finished all {args.epochs} epochs", flush=True)
