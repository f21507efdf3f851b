import argparse
import time
from pathlib import Path

from sdk import log_metric, stop_requested

parser = argparse.ArgumentParser()
parser.add_argument("--learning_rate", type=float, required=True)
parser.add_argument("--epochs", type=int, required=True)
parser.add_argument("--epoch_seconds", type=float, required=True)
parser.add_argument("--out", required=True)
args = parser.parse_args()

quality = min(1.0, args.learning_rate * 100)
best = 0.0
for epoch in range(1, args.epochs + 1):
    time.sleep(args.epoch_seconds)
    score = quality * (1 - 0.5 / epoch)
    best = max(best, score)
    log_metric("score", score, step=epoch)
    print(f"epoch {epoch}: score {score:.6f}", flush=True)
    if epoch < args.epochs and stop_requested():
        print(f"early terminated after epoch {epoch} of {args.epochs}", flush=True)
        break
Path(args.out, "value.txt").write_text(f"{best}")
