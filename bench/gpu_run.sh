#!/usr/bin/env bash
# One command for a lent GPU machine (the `device` tool runs it over a copy of the working tree):
#     bash bench/gpu_run.sh            # about 5 minutes on an H100: the GPU checks, then the bench
# Its image has torch, torchvision, Pillow, numpy, PyYAML, onnx and onnxruntime, and no Django:
# both scripts need nothing else. Full outputs go to $OUT (the device tool brings them back).
set -u
OUT=${OUT:-/tmp/gpu-run}
mkdir -p "$OUT"
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv | tee "$OUT/nvidia-smi.txt"
python3 -c "import torch, torchvision; print('torch', torch.__version__, 'torchvision', torchvision.__version__)"
python3 bench/gpu_checks.py 2>&1 | tee "$OUT/gpu_checks.txt"
python3 bench/train_gpu.py --data /tmp/bench-train-gpu 2>&1 | tee "$OUT/train_gpu.txt"
