"""The checks of a machine with a GPU (bench/gpu_checks.py: they also run without pytest), as
tests: skipped where CUDA cannot start (CI has no GPU). Run them with `pytest -m gpu`."""
from __future__ import annotations

import pytest
import torch

from bench import gpu_checks

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="no GPU CUDA can use here")]


@pytest.mark.parametrize("check", gpu_checks.CHECKS, ids=lambda c: c.__name__[len("check_"):])
def test_on_a_gpu(check, tmp_path):
    result = check(tmp_path)
    if result.startswith("SKIPPED"):
        pytest.skip(result)
