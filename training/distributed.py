"""Rank-aware helpers, after torchvision's classification reference (references/classification/utils.py).

Distributed mode is switched on by the environment that `torchrun` sets (RANK, WORLD_SIZE,
LOCAL_RANK, MASTER_ADDR, MASTER_PORT), not by a separate code path: one process without those
variables is simply world size 1.
"""
from __future__ import annotations

import os

import torch
import torch.distributed as dist


def init_distributed_mode(args) -> None:
    """Set args.distributed, args.rank, args.world_size, args.local_rank (+ args.device)."""
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        args.rank = int(os.environ["RANK"])
        args.world_size = int(os.environ["WORLD_SIZE"])
        args.local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    else:
        args.rank, args.world_size, args.local_rank = 0, 1, 0
    args.distributed = args.world_size > 1
    use_cuda = torch.cuda.is_available() and getattr(args, "device", "cpu") == "cuda"
    if use_cuda:
        torch.cuda.set_device(args.local_rank)
        args.device = f"cuda:{args.local_rank}"
    else:
        args.device = "cpu"
    if not args.distributed:
        return
    backend = "nccl" if use_cuda else "gloo"
    dist.init_process_group(backend=backend, init_method="env://", world_size=args.world_size, rank=args.rank)
    dist.barrier()


def is_dist_avail_and_initialized() -> bool:
    return dist.is_available() and dist.is_initialized()


def get_world_size() -> int:
    return dist.get_world_size() if is_dist_avail_and_initialized() else 1


def get_rank() -> int:
    return dist.get_rank() if is_dist_avail_and_initialized() else 0


def is_main_process() -> bool:
    return get_rank() == 0


def save_on_master(obj, path) -> None:
    """torch.save on rank 0 only, through a temporary file: a reader never sees half a checkpoint."""
    if is_main_process():
        tmp = f"{path}.tmp"
        torch.save(obj, tmp)
        os.replace(tmp, path)


def reduce_sum(values: list[float], device="cpu") -> list[float]:
    """Sum each value over every process (identity in a single process)."""
    t = torch.tensor(values, dtype=torch.float64, device=device)
    if is_dist_avail_and_initialized():
        dist.barrier()
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
    return t.tolist()


def reduce_across_processes(value: float, device="cpu") -> float:
    return reduce_sum([value], device)[0]


def broadcast_flag(flag: bool, device="cpu") -> bool:
    """Rank 0's decision (for example: stop early), adopted by every rank."""
    if not is_dist_avail_and_initialized():
        return flag
    t = torch.tensor([1 if flag else 0], device=device)
    dist.broadcast(t, src=0)
    return bool(t.item())


def cleanup() -> None:
    if is_dist_avail_and_initialized():
        dist.destroy_process_group()


class ShardSampler(torch.utils.data.Sampler):
    """Evaluation sampler: rank r takes items r, r + W, r + 2W... (no padding, no duplicate),
    so that sums reduced across processes are exact."""

    def __init__(self, dataset, rank: int, world_size: int):
        self.indices = list(range(rank, len(dataset), world_size))

    def __iter__(self):
        return iter(self.indices)

    def __len__(self):
        return len(self.indices)
