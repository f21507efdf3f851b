"""Run by tests/training/test_sync_batchnorm.py under torchrun (2 processes, Gloo on CPUs): a small
network with BatchNorm, converted by training.distributed.convert_sync_batchnorm and wrapped in
DistributedDataParallel, one training step on each process's half of a batch, against the same
network with plain BatchNorm on the whole batch in one process. Writes the largest differences
(outputs, gradients, running statistics) to OUT/rank-<RANK>.json."""
import json
import os
import sys
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn

from training import distributed as dist_utils


def network() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.Conv2d(4, 2, 1),
                         nn.BatchNorm2d(2), nn.Flatten(), nn.Linear(2 * 5 * 5, 3))


def largest(a, b) -> float:
    return max(float((x.detach().double() - y.detach().double()).abs().max()) for x, y in zip(a, b))


def main() -> None:
    out = Path(sys.argv[1])
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(1)
    images, targets = torch.randn(8, 3, 5, 5) * 2 + 1, torch.randint(0, 3, (8,))
    one = network()
    one_output = one(images)
    nn.functional.cross_entropy(one_output, targets).backward()

    mine = slice(4 * rank, 4 * rank + 4)
    model = dist_utils.convert_sync_batchnorm(network())
    ddp = nn.parallel.DistributedDataParallel(model)
    output = ddp(images[mine])
    nn.functional.cross_entropy(output, targets[mine]).backward()  # DDP averages the two halves' gradients
    result = {"kinds": sorted({type(m).__name__ for m in model.modules() if "Norm" in type(m).__name__}),
              "output": largest([output], [one_output[mine]]),
              "gradients": largest([p.grad for p in model.parameters()], [p.grad for p in one.parameters()]),
              "running": largest(list(model.buffers()), list(one.buffers()))}
    (out / f"rank-{rank}.json").write_text(json.dumps(result))
    # Both ranks have written their figures; end here, without tearing the group down: under a busy
    # CI machine Gloo's teardown once aborted in C++ (SIGABRT, "terminate called without an active
    # exception") after both ranks had written their figures. What this check measures is the arithmetic.
    dist.barrier()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
