#!/usr/bin/env bash
# One command for a GPU machine, run in a copy of the working tree:
#     bash bench/gpu_run.sh            # about 8 minutes on an NVIDIA H100 or H200 with 16 cores: the bench, then the GPU checks
#     SIDES=synthetic,plain_bf16,engine bash bench/gpu_run.sh   # fewer rows of the bench
# The machine needs torch, torchvision, Pillow, numpy, PyYAML, onnx and onnxruntime, and no Django:
# both scripts need nothing else. Full outputs go to $OUT (default /tmp/gpu-run). Each
# step has a time limit, so that a slow or stuck one leaves the others their time.
set -u
OUT=${OUT:-/tmp/gpu-run}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv | tee "$OUT/nvidia-smi.txt"
python3 -c "import torch, torchvision; print('torch', torch.__version__, 'torchvision', torchvision.__version__)"
timeout "${CHECK_FIRST_S:-60}" python3 bench/gpu_checks.py cropped 2>&1 | tee "$OUT/gpu_checks_first.txt"
timeout "${BENCH_S:-400}" python3 bench/train_gpu.py --data /tmp/bench-train-gpu 2>&1 | tee "$OUT/train_gpu.txt"
timeout "${CHECKS_S:-200}" python3 bench/gpu_checks.py 2>&1 | tee "$OUT/gpu_checks.txt"
