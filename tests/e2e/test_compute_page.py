"""The Compute page with a real worker: its compute target, what it offers, its GPUs (a fake
nvidia-smi lists two; CUDA cannot start here: the page says so), its state, and the pretrained
weights in its torch hub folder (what the pre-flight check of a pretrained ResNet reads)."""
import pytest

from modules._vision_models import WEIGHTS_FILES
from tests.compute.test_compute_targets import H100, fake_nvidia_smi

pytestmark = pytest.mark.browser


def test_the_compute_page_lists_a_worker_with_its_weights(page, start_worker, tmp_path):
    folder = tmp_path / "torch" / "hub" / "checkpoints"
    folder.mkdir(parents=True)
    for name in ("resnet18", "densenet121"):
        (folder / WEIGHTS_FILES[name]).write_bytes(b"weights")
    worker = start_worker("cp", concurrency=1, extra_env={"TORCH_HOME": str(tmp_path / "torch"),
                                                          "PATH": fake_nvidia_smi(tmp_path / "bin", H100, H100)})
    page.goto(f"{page.base}/compute")
    row = page.locator(f'tr[data-hostname="{worker.hostname}"]')
    row.wait_for()
    assert row.locator(".state").inner_text() == "idle"
    target = page.locator('section.target[data-target="cpu"]')  # its GPUs do not work: the cpu target
    assert target.locator(f'tr[data-hostname="{worker.hostname}"]').count() == 1
    assert f"0: {H100} (81559 MiB)" in row.locator(".gpu-models").inner_text()
    assert "CUDA cannot start" in row.locator(".cuda-problem").inner_text()
    assert "cannot start CUDA" in target.locator("p.target-cuda-problem").inner_text()
    weights = row.locator(".weights")
    assert weights.inner_text().split() == ["2", "files", "in", str(folder)]
    assert weights.get_attribute("title") == f"{folder}: {WEIGHTS_FILES['densenet121']}, {WEIGHTS_FILES['resnet18']}"
    # inside the page: the folder's long path wraps within its cell
    cell, table = weights.bounding_box(), page.locator("table.workers").bounding_box()
    assert cell["x"] + cell["width"] <= table["x"] + table["width"] + 0.5
    page.shot("compute")
