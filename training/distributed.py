"""Rank-aware helpers, after torchvision's classification reference (references/classification/utils.py).

Distributed mode is switched on by the environment that `torchrun` sets (RANK, WORLD_SIZE,
LOCAL_RANK, MASTER_ADDR, MASTER_PORT), not by a separate code path: one process without those
variables is simply world size 1.
"""
from __future__ import annotations

import os

import torch
import torch.distributed as dist
from torch import nn

from training import devices


def init_distributed_mode(args) -> None:
    """Set args.distributed, args.rank, args.world_size, args.local_rank, and args.device: the
    device args.device asks for ('auto': this local rank's GPU when CUDA can use one, else the CPU;
    training/devices.py); NCCL between GPUs, Gloo between CPUs."""
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        args.rank = int(os.environ["RANK"])
        args.world_size = int(os.environ["WORLD_SIZE"])
        args.local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    else:
        args.rank, args.world_size, args.local_rank = 0, 1, 0
    args.distributed = args.world_size > 1
    device = devices.choose(getattr(args, "device", devices.AUTO), args.local_rank)
    args.device = str(device)
    if not args.distributed:
        return
    backend = "nccl" if device.type == "cuda" else "gloo"
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


def gather_object(obj) -> list:
    """`obj` of every rank, in rank order, on rank 0 ([] on the others; [obj] when not
    distributed). Over NCCL the objects travel through this rank's GPU (devices.choose set it)."""
    if not is_dist_avail_and_initialized():
        return [obj]
    gathered: list | None = [None] * get_world_size() if is_main_process() else None
    dist.gather_object(obj, gathered, dst=0)
    return gathered or []


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


def broadcast_buffers(model: nn.Module) -> None:
    """Rank 0's buffers (batch-norm running statistics) on every rank."""
    if is_dist_avail_and_initialized():
        for buffer in model.buffers():
            dist.broadcast(buffer.data, src=0)


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


# --------------------------------------------------------------------------- Sync BatchNorm


def convert_sync_batchnorm(model: nn.Module) -> nn.Module:
    """Every BatchNorm layer normalises over the whole global batch (every process's images), as
    one process with the global batch would, instead of over this process's part alone
    (torchvision reference: --sync-bn). On GPUs, torch's own SyncBatchNorm; torch has no CPU
    kernel for it (aten::batch_norm_stats is CUDA-only), so on CPUs `GlobalBatchNorm` below."""
    if next(model.parameters()).device.type == "cuda":
        return nn.SyncBatchNorm.convert_sync_batchnorm(model)
    return _convert(model)


def _convert(module: nn.Module) -> nn.Module:
    if isinstance(module, nn.modules.batchnorm._BatchNorm) and not isinstance(module, GlobalBatchNorm):
        sync = GlobalBatchNorm(module.num_features, module.eps, module.momentum, module.affine, module.track_running_stats)
        if module.affine:
            with torch.no_grad():
                sync.weight.copy_(module.weight)
                sync.bias.copy_(module.bias)
        sync.running_mean, sync.running_var = module.running_mean, module.running_var
        sync.num_batches_tracked = module.num_batches_tracked
        sync.train(module.training)
        return sync
    for name, child in module.named_children():
        module.add_module(name, _convert(child))
    return module


class GlobalBatchNorm(nn.BatchNorm2d):
    """BatchNorm whose training statistics are those of the global batch: each layer sums its
    per-channel sum, sum of squares and count over the processes (one all-reduce, through
    autograd, so that the gradient flows across processes as in one big batch). Evaluation,
    and a single process, are plain BatchNorm. Works on any device and backend (Gloo on CPUs)."""

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not (self.training and is_dist_avail_and_initialized() and dist.get_world_size() > 1):
            return super().forward(x)
        channels = x.shape[1]
        dims = [0, *range(2, x.dim())]
        # sums in float64: the variance as E[x^2] - E[x]^2 loses nothing that matters then
        local = torch.cat([x.sum(dims, dtype=torch.float64), (x * x).sum(dims, dtype=torch.float64),
                           torch.tensor([x.numel() / channels], dtype=torch.float64, device=x.device)])
        total = _SumAcrossProcesses.apply(local)
        n = total[-1]
        if n.item() <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size {list(x.shape)}")
        mean = total[:channels] / n
        var = (total[channels:2 * channels] / n - mean * mean).clamp_min(0)
        if self.track_running_stats:
            assert self.running_mean is not None and self.running_var is not None and self.num_batches_tracked is not None
            with torch.no_grad():
                self.num_batches_tracked.add_(1)
                factor = self.momentum if self.momentum is not None else 1.0 / self.num_batches_tracked.item()
                self.running_mean.mul_(1 - factor).add_(factor * mean.to(x.dtype))
                self.running_var.mul_(1 - factor).add_(factor * (var * n / (n - 1)).to(x.dtype))
        shape = [1, channels] + [1] * (x.dim() - 2)
        y = (x - mean.to(x.dtype).view(shape)) * torch.rsqrt(var.to(x.dtype).view(shape) + self.eps)
        if self.affine:
            y = y * self.weight.view(shape) + self.bias.view(shape)
        return y


class _SumAcrossProcesses(torch.autograd.Function):
    """all_reduce(SUM) with its gradient: every process used the sum, so each one's input gets
    the sum of their gradients."""

    @staticmethod
    def forward(ctx, tensor):
        tensor = tensor.clone()
        dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
        return tensor

    @staticmethod
    def backward(ctx, grad):
        grad = grad.clone()
        dist.all_reduce(grad, op=dist.ReduceOp.SUM)
        return grad
