"""The processes of the toy_distributed module: Gloo all-reduces, a failure on demand.

    torchrun ... -m tests.toy_rank --out DIR --steps N --step-seconds S --fail-rank R --fail-at K
"""
import argparse
import json
import os
import time
from pathlib import Path

import torch
import torch.distributed as dist


class ToyFailure(RuntimeError):
    """Raised on purpose by one rank."""


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--step-seconds", type=float, default=0.1)
    p.add_argument("--fail-rank", type=int, default=-1)
    p.add_argument("--fail-at", type=int, default=2)
    args = p.parse_args()
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    out = Path(args.out)
    names = ("MASTER_ADDR", "MASTER_PORT", "NODE_RANK", "WORLD_SIZE", "RANK", "LOCAL_RANK", "OMP_NUM_THREADS")
    print("environment: " + " ".join(f"{k}={os.environ.get(k)}" for k in names), flush=True)
    for step in range(1, args.steps + 1):
        if rank == args.fail_rank and step == args.fail_at:
            raise ToyFailure(f"rank {rank} fails at step {step}, as asked")
        t = torch.ones(1)
        dist.all_reduce(t)
        print(f"step {step}: sum {int(t.item())}", flush=True)
        if rank == 0:
            with (out / "metrics.jsonl").open("a") as f:
                f.write(json.dumps({"name": "sum", "value": t.item(), "step": step}) + "\n")
        time.sleep(args.step_seconds)
    if rank == 0:
        (out / "world.txt").write_text(str(world))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
