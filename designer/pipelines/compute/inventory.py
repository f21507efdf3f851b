"""What hardware a worker has, taken once when it starts (heartbeat.py writes it to its Worker
row): the GPUs `nvidia-smi` lists (index, name, memory), and whether CUDA starts on them.

Never imports torch in the worker's main process (seconds and hundreds of MB, and a CUDA context
would be inherited by every forked pool process): the GPUs are listed by `nvidia-smi`, and CUDA
is tried once in a child interpreter, only when nvidia-smi lists GPUs. A worker whose CUDA cannot
start (a driver older than the CUDA torch was built with, a CPU-only torch, a GPU in a bad
state) offers 0 GPUs, says why, and joins the `cpu` target unless told otherwise."""
from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass

QUERY = ["nvidia-smi", "--query-gpu=index,name,memory.total", "--format=csv,noheader,nounits"]
PROBE = "import torch; torch.cuda.init(); print(torch.cuda.device_count())"
PROBE_TIMEOUT = 120  # importing torch and creating a CUDA context on a busy machine
CPU_TARGET, GPU_TARGET = "cpu", "gpu"  # the targets a worker joins when WORKER_COMPUTE_TARGET is empty


@dataclass(frozen=True)
class Inventory:
    listed: tuple[dict, ...] = ()  # {index, name, memory_mb} of each GPU nvidia-smi lists
    usable: int = 0  # the GPUs offered: CUDA started and sees them
    cuda_problem: str = ""  # why CUDA did not start although GPUs are listed ('' when it did, or none is)

    def target(self, configured: str) -> str:
        """The compute target the worker joins: WORKER_COMPUTE_TARGET, else by what it can use."""
        return configured or (GPU_TARGET if self.usable else CPU_TARGET)

    @property
    def offered(self) -> list[dict]:
        """The GPUs it offers to modules (the first `usable` listed)."""
        return list(self.listed[:self.usable])


def parse_gpus(text: str) -> list[dict]:
    """nvidia-smi's CSV (`0, NVIDIA H100 80GB HBM3, 81559`) as [{index, name, memory_mb}]; lines
    that are not a GPU (a warning, an [N/A] memory) keep what can be read."""
    gpus = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 3 or not parts[0].isdigit():
            continue
        memory = parts[-1]
        gpus.append({"index": int(parts[0]), "name": ", ".join(parts[1:-1]),
                     "memory_mb": int(memory) if memory.isdigit() else None})
    return gpus


def list_gpus() -> list[dict]:
    """The GPUs nvidia-smi lists; none without nvidia-smi, or when it fails (no driver loaded)."""
    if not shutil.which(QUERY[0]):
        return []
    try:
        done = subprocess.run(QUERY, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return parse_gpus(done.stdout) if done.returncode == 0 else []


def probe_cuda() -> tuple[int, str]:
    """(GPUs CUDA sees, '') when CUDA starts in a child interpreter; (0, why) when it does not."""
    try:
        done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=PROBE_TIMEOUT)
    except subprocess.TimeoutExpired:
        return 0, f"CUDA did not start within {PROBE_TIMEOUT} s (torch.cuda.init() hung)"
    except OSError as e:
        return 0, f"CUDA could not be tried: {e}"
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        return 0, f"CUDA cannot start: {(lines[-1] if lines else f'exit code {done.returncode}')[:300]}"
    try:
        count = int(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return 0, f"CUDA cannot start: the probe printed {done.stdout.strip()[:100]!r}"
    return count, "" if count else "CUDA starts but sees no GPU (CUDA_VISIBLE_DEVICES empty?)"


def take() -> Inventory:
    """This machine's GPUs and whether CUDA starts on them (the probe runs only when GPUs are listed)."""
    listed = list_gpus()
    if not listed:
        return Inventory()
    usable, problem = probe_cuda()
    return Inventory(tuple(listed), min(usable, len(listed)), problem)
