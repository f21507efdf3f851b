"""Cancel that cannot corrupt (issue 11, item 4): each long-running module is cancelled mid-way on
real workers, ends "cancelled" promptly, leaves no partial output, and the same pipeline
submitted again runs the cancelled node again (nothing reused from it) to a complete output.

The module stops at a safe point (ctx.check_cancelled, read from the flag the node's heartbeat
sets); a distributed node's processes are ended. Nothing is injected into a running thread.
"""
import io
import json
import time
from pathlib import Path

import pytest
import yaml
from django.core.management import call_command

from designer.pipelines.models import Event, NodeLaunch, Run
from designer.pipelines.runs import artifacts
from designer.pipelines.runs import service as runs
from sdk.formats.image_directory import read_path
from tests.conftest import ROOT, wait_for_run
from tests.imagesets import digits_folder, make_archive
from tests.pipes import link, node, out_path, pipeline
from tests.runs.test_distributed import no_process_left, two_workers, workers  # noqa: F401 - fixtures

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.production]

PROMPT_SECONDS = 15  # from the cancel request to the run's end, on a machine shared by five engineers


def add_dataset(users, path: Path) -> int:
    out = io.StringIO()
    call_command("add_dataset", str(path), owner=users["owner"].username, stdout=out)
    return int(out.getvalue())


def cancel_once(run: Run, ready, timeout: float = 600) -> Run:
    """Wait until `ready(run)`, cancel the run, and return it once over (within PROMPT_SECONDS)."""
    wait_for_run(run.id, timeout=timeout, until=lambda r: ready(r) or r.finished)
    assert not Run.objects.get(pk=run.id).finished, "the run ended before it could be cancelled"
    runs.cancel(run)
    asked = time.monotonic()
    run = wait_for_run(run.id, timeout=PROMPT_SECONDS + 30)
    assert time.monotonic() - asked < PROMPT_SECONDS, time.monotonic() - asked
    return run


def assert_cancelled_without_output(run: Run, node_id: str, port: str) -> None:
    nr = run.nodes.get(node_id=node_id)
    assert run.status == "cancelled" and nr.status == "cancelled", (run.status, nr.status, nr.error)
    assert nr.error == "Cancelled by the user." and not nr.outputs
    assert not (artifacts.node_dir(run.id, node_id) / port).exists()  # nothing half-written is left
    assert Event.objects.filter(run=run, node_id=node_id, type="node_cancelled").exists()


def run_again(users, doc: dict, node_id: str, timeout: float = 900) -> Run:
    """The same pipeline once more: the cancelled node runs again (not reused) and completes."""
    again = wait_for_run(runs.submit(users["owner"], doc).id, timeout=timeout)
    nr = again.nodes.get(node_id=node_id)
    assert again.status == "completed" and nr.status == "completed", (again.status, nr.error)
    assert nr.reused_from is None
    return again


# ---------------------------------------------------------------- Convert to Image Directory


@pytest.fixture
def big_archive(tmp_path) -> tuple[Path, int]:
    """Every digit of scikit-learn at 256 x 256: 1,797 images, many seconds of converting (many
    heartbeats): the cancel comes long before the end, also when the test stalls on a busy machine."""
    folder = digits_folder(tmp_path / "digits", size=256)
    return make_archive(folder, tmp_path / "digits.zip"), sum(1 for p in folder.rglob("*.png"))


def converted_so_far(run: Run) -> int:
    images = artifacts.node_dir(run.id, "convert") / "image_directory" / "images"
    return sum(1 for _ in images.rglob("*.*")) if images.is_dir() else 0


def convert_pipeline(dataset_id: int) -> dict:
    return pipeline([node("dataset", "dataset", dataset=dataset_id), node("convert", "convert_to_image_directory")],
                    [link("dataset", "convert", "dataset", "input_dataset")])


@pytest.mark.timeout(900)
def test_convert_cancelled_mid_archive_ends_promptly_and_runs_again_to_a_complete_output(workers, users, big_archive):  # noqa: F811
    archive, count = big_archive
    doc = convert_pipeline(add_dataset(users, archive))
    run = cancel_once(runs.submit(users["owner"], doc), lambda r: converted_so_far(r) >= 100)
    assert_cancelled_without_output(run, "convert", "image_directory")

    again = run_again(users, doc, "convert")
    assert again.nodes.get(node_id="dataset").status == "reused"
    out = out_path(again.nodes.get(node_id="convert").outputs["image_directory"])
    assert len(read_path(out).items) == count  # every image, none missing from a half-done folder


# ---------------------------------------------------------------- Train PyTorch Model, 1 process and 2


def train_pipeline(dataset_id: int, nodes: int = 1, processes: int = 1) -> dict:
    """examples/digits.json up to Train PyTorch Model: 4 short epochs on 20 images of each digit."""
    doc = json.loads((ROOT / "examples" / "digits.json").read_text())
    doc["nodes"] = [n for n in doc["nodes"] if n["id"] not in ("score", "evaluate")]
    doc["links"] = [x for x in doc["links"] if x["to"]["node"] not in ("score", "evaluate")]
    for n in doc["nodes"]:
        if n["id"] == "dataset":
            n["parameters"]["dataset"] = dataset_id
        if n["id"] == "train":
            n["parameters"].update({"epochs": 4, "batch_size": 16 // (nodes * processes), "patience": 4,
                                    "print_frequency": 1})
            n["run_settings"] = {"node_count": nodes, "process_count_per_node": processes}
    return doc


@pytest.fixture
def small_digits(users, tmp_path) -> int:
    return add_dataset(users, digits_folder(tmp_path / "digits", per_class=20))


def an_epoch_done(run: Run) -> bool:
    """Train PyTorch Model reported the end of its first epoch (and has three more to go)."""
    return Event.objects.filter(run=run, node_id="train", type="metric", data__name="validation_top1_accuracy").exists()


def assert_trained(run: Run) -> None:
    out = out_path(run.nodes.get(node_id="train").outputs["trained_model"])
    model = yaml.safe_load((out / "model.yaml").read_text())
    assert model["epochs_run"] == 4 and (out / "model.pt").is_file()


@pytest.mark.timeout(1500)
def test_train_cancelled_mid_way_ends_promptly_and_runs_again_to_a_complete_model(workers, users, small_digits):  # noqa: F811
    doc = train_pipeline(small_digits)
    run = cancel_once(runs.submit(users["owner"], doc), an_epoch_done)
    assert_cancelled_without_output(run, "train", "trained_model")

    again = run_again(users, doc, "train")
    assert again.nodes.get(node_id="resnet").status == "reused"
    assert_trained(again)


@pytest.mark.timeout(1500)
def test_distributed_train_cancelled_mid_way_ends_its_processes_and_runs_again_to_a_complete_model(
        workers, users, small_digits):  # noqa: F811
    doc = train_pipeline(small_digits, nodes=2, processes=1)
    run = cancel_once(runs.submit(users["owner"], doc), an_epoch_done)
    assert_cancelled_without_output(run, "train", "trained_model")
    no_process_left(run)  # torchrun and its ranks, on both workers
    assert {x.status for x in NodeLaunch.objects.filter(noderun__run=run)} == {"exited"}

    again = run_again(users, doc, "train")
    assert_trained(again)
    no_process_left(again)
