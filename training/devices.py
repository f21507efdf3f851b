"""The hardware a training or scoring process uses, chosen from the machine, never from a default
(house style, "Training habits for GPUs"): the GPU of its local rank when CUDA can use one, else
the CPU cores; the mixed precision, the memory format and the number of data-loading processes
that go with it (torchvision's classification reference: --amp, --channels-last, --workers;
NVIDIA DeepLearningExamples: bf16 on Ampere and newer, fp16 with a gradient scaler before).

    device = devices.choose("auto", local_rank)      # cuda:<local rank>, or cpu
    devices.describe(device)                          # 'GPU 0: NVIDIA H100 80GB HBM3, 79.1 GiB ...'
    amp = devices.precision("auto", device)           # 'bf16' / 'fp16' / 'off'
    workers = devices.loader_workers(-1, device, local_world_size)
"""
from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

import torch

from sdk.context import GPU_ENV
from sdk.errors import NotInRangeValueError

AUTO = "auto"
PRECISIONS = ("auto", "bf16", "fp16", "off")
GiB = 2**30
# data-loading processes per GPU at most: past this, more processes only cost memory
MAX_LOADER_WORKERS = 16


class NoGPUError(NotInRangeValueError):
    """A GPU was asked for where CUDA cannot use one."""


def cuda_usable() -> bool:
    return torch.cuda.is_available() and torch.cuda.device_count() > 0


def choose(requested: str = AUTO, local_rank: int = 0) -> torch.device:
    """`auto`: the GPU of this local rank when CUDA can use one (local rank r on GPU r; a process
    that sees a single GPU, CUDA_VISIBLE_DEVICES narrowed to it, uses that one; a 1 x 1 job in the
    worker's process, the GPU the engine leased it: $DESIGNER_GPU), else the CPU.
    `cuda` where CUDA cannot start is refused, saying why; `cpu` is the CPU."""
    if requested == "cpu" or (requested == AUTO and not cuda_usable()):
        return torch.device("cpu")
    if not cuda_usable():
        raise NoGPUError(f"a GPU was asked for, but CUDA cannot use one on this machine "
                         f"({_cuda_problem()}); run on a worker with a GPU, or on the CPU")
    count = torch.cuda.device_count()
    held = os.environ.get(GPU_ENV)  # a 1 x 1 job in the worker's process: the GPU its lease holds
    if held is not None and local_rank == 0 and held.isdigit() and int(held) < count:
        local_rank = int(held)
    index = local_rank if local_rank < count else (0 if count == 1 else None)
    if index is None:
        raise NoGPUError(f"local rank {local_rank} needs GPU {local_rank}, but this machine has {count} GPU(s); "
                         f"lower Process count per node to at most {count}")
    torch.cuda.set_device(index)
    return torch.device("cuda", index)


def _cuda_problem() -> str:
    if not torch.backends.cuda.is_built():
        return "this torch is a CPU build"
    try:
        torch.cuda.init()
    except Exception as e:  # the driver's own words
        return str(e).strip().splitlines()[0][:300]
    return "no GPU is visible (CUDA_VISIBLE_DEVICES=" + os.environ.get("CUDA_VISIBLE_DEVICES", "<unset>") + ")"


def describe(device: torch.device) -> str:
    """What a log line says of the device: the GPU's name, memory and capability, or the cores."""
    if device.type == "cuda":
        p = torch.cuda.get_device_properties(device)
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        where = f" (CUDA_VISIBLE_DEVICES={visible})" if visible else ""
        return (f"GPU {device.index}{where}: {p.name}, {p.total_memory / GiB:.1f} GiB, "
                f"compute capability {p.major}.{p.minor}")
    return f"CPU: {cores()} core(s), {torch.get_num_threads()} torch thread(s)"


def cores() -> int:
    """The cores this process may run on (its affinity: a container's or taskset's limit counts)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def precision(requested: str, device: torch.device) -> str:
    """The mixed precision of a training on `device`: 'bf16', 'fp16' (with a gradient scaler) or
    'off'. `auto`: bf16 on GPUs that support it (Ampere and newer), fp16 on older GPUs, off on CPUs
    (bf16 autocast runs there, but only CPUs with AMX or AVX512-BF16 gain from it)."""
    if requested not in PRECISIONS:
        raise NotInRangeValueError(f"Mixed precision must be one of {', '.join(PRECISIONS)} (not {requested[:40]!r})")
    if device.type != "cuda":
        if requested == "fp16":
            raise NotInRangeValueError("Mixed precision fp16 needs a GPU; on CPUs choose bf16 or off")
        return "off" if requested == AUTO else requested
    bf16 = torch.cuda.is_bf16_supported(including_emulation=False)
    if requested == AUTO:
        return "bf16" if bf16 else "fp16"
    if requested == "bf16" and not bf16:
        raise NotInRangeValueError(f"Mixed precision bf16 is not supported by {torch.cuda.get_device_name(device)}; "
                                   f"choose fp16 (with a gradient scaler) or auto")
    return requested


def autocast(amp: str, device: torch.device):
    """The autocast context of a forward pass at precision `amp` (a no-op when off)."""
    if amp == "off":
        return contextlib.nullcontext()
    return torch.autocast(device.type, dtype=torch.bfloat16 if amp == "bf16" else torch.float16)


def grad_scaler(amp: str, device: torch.device) -> torch.amp.GradScaler:
    """fp16 needs its loss scaled (small gradients underflow); bf16 and fp32 do not: a disabled
    scaler is then a pass-through."""
    return torch.amp.GradScaler(device.type, enabled=amp == "fp16")


def memory_format(device: torch.device) -> torch.memory_format:
    """channels_last on GPUs (tensor cores read NHWC), the default layout on CPUs."""
    return torch.channels_last if device.type == "cuda" else torch.contiguous_format


def loader_workers(requested: int, device: torch.device, local_world_size: int = 1) -> int:
    """Data-loading processes of one training process. A number >= 0 is taken as given; -1 (auto):
    on a GPU, the cores this process's share of the machine has, less one for the training loop
    itself, at most MAX_LOADER_WORKERS; on CPUs none: the model's threads already use every core,
    and images decoded in the training process do not compete with them (bench/train.py)."""
    if requested >= 0:
        return requested
    if device.type != "cuda":
        return 0
    share = cores() // max(1, local_world_size)
    return max(0, min(share - 1, MAX_LOADER_WORKERS))


def setup(device: torch.device) -> None:
    """Process-wide switches for fast training on `device`: cuDNN picks the fastest convolution
    algorithm for each shape (shapes are fixed: the recipe resizes every image), and float32
    matrix products use TF32 tensor cores (torchvision's reference: --use-deterministic-algorithms
    off; PyTorch's default for convolutions already)."""
    if device.type == "cuda":
        torch.backends.cudnn.benchmark = True
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True


def out_of_memory_message(device: torch.device, batch_size: int, amp: str) -> str:
    """What a user reads when a GPU runs out of memory: the batch size, the memory the GPU had, what to change."""
    total = torch.cuda.get_device_properties(device).total_memory if device.type == "cuda" else 0
    peak = torch.cuda.max_memory_allocated(device) if device.type == "cuda" else 0
    hint = "or set Mixed precision to auto (bf16 or fp16 halve the activations' memory)" if amp == "off" else \
        "(Mixed precision is already on)"
    return (f"the GPU ran out of memory at Batch size {batch_size}: {describe(device)}, "
            f"{peak / GiB:.1f} GiB of {total / GiB:.1f} GiB allocated by this training at its peak; "
            f"lower Batch size {hint}")


def is_device_error(e: BaseException) -> bool:
    """A failure of CUDA or NCCL (the driver, a kernel, the collective library), not of the recipe."""
    text = str(e)
    return isinstance(e, getattr(torch, "AcceleratorError", ())) or any(
        word in text for word in ("CUDA error", "CUDA driver", "cuDNN error", "CUBLAS_STATUS", "NCCL", "nccl"))


def device_error_message(e: BaseException, args) -> str:
    """A CUDA or NCCL error, naming the rank, the worker and the GPU it happened on."""
    device = torch.device(args.device)
    try:
        where = describe(device)
    except Exception:  # the GPU itself may be what failed
        where = str(device)
    worker = os.environ.get("DESIGNER_WORKER") or os.uname().nodename
    first = str(e).strip().splitlines()[0][:500] if str(e).strip() else type(e).__name__
    return f"rank {getattr(args, 'rank', 0)} on worker {worker}, {where}: {first}"


def release(args) -> None:
    """Give the GPU's cached memory back after a training run inside a long-lived process (a
    worker's pool process runs one node after another)."""
    if str(getattr(args, "device", "cpu")).startswith("cuda") and torch.cuda.is_initialized():
        torch.cuda.empty_cache()


def record(folder, rank: int, device: torch.device, line: str) -> None:
    """<folder>/rank-<r>.json: the device of one process, for the node pane (small, one per rank)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    info = {"rank": rank, "worker": os.environ.get("DESIGNER_WORKER") or os.uname().nodename,
            "device": device.type, "text": line[:500]}
    if device.type == "cuda":
        p = torch.cuda.get_device_properties(device)
        info.update(gpu=p.name, gpu_memory_gib=round(p.total_memory / GiB, 1))
    tmp = folder / f".rank-{rank}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(info))
    os.replace(tmp, folder / f"rank-{rank}.json")
