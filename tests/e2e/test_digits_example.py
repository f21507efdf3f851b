"""The digits example end to end, headless: scikit-learn's digits as an image folder, uploaded as
a dataset, then examples/digits.json (Convert -> Split -> Init + Apply transformations ->
ResNet-18 from scratch -> Train -> Score -> Evaluate) through `manage.py run_pipeline --inline`."""
import io
import json
import time

import pytest
import yaml
from django.core.management import call_command

from designer.pipelines.models import Run
from tests.conftest import ROOT
from tests.imagesets import digits_folder
from tests.modules.model_helpers import one_thread  # noqa: F401 - a fixture
from tests.pipes import out_path

# transaction=True: the run's heartbeat thread writes through its own connection while the run goes on
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("one_thread")]


def test_the_digits_example_reaches_95_percent_in_a_few_minutes(tmp_path):
    folder = digits_folder(tmp_path / "digits")  # 1,797 images, 32x32
    out = io.StringIO()
    call_command("add_dataset", str(folder), owner="admin", name="digits", stdout=out)
    dataset_id = int(out.getvalue())

    started = time.monotonic()
    call_command("run_pipeline", str(ROOT / "examples" / "digits.json"), "--inline",
                 "--set", f"dataset.dataset={dataset_id}", stdout=io.StringIO())
    duration = time.monotonic() - started

    run = Run.objects.get()
    assert run.status == "completed"
    nodes = {n.node_id: n for n in run.nodes.all()}
    model = yaml.safe_load((out_path(nodes["train"].outputs["trained_model"]) / "model.yaml").read_text())
    evaluation = json.loads((out_path(nodes["evaluate"].outputs["evaluation_results"]) / "evaluation.json").read_text())
    print(f"digits example: {duration:.0f} s, best epoch {model['best_epoch']}, validation top-1 "
          f"{100 * model['validation_top1_accuracy']:.2f}%, evaluated accuracy {100 * evaluation['left']['overall']['accuracy']:.2f}%")
    assert model["validation_top1_accuracy"] >= 0.95
    assert evaluation["left"]["overall"]["accuracy"] == pytest.approx(model["validation_top1_accuracy"])
    assert evaluation["left"]["count"] == 179 and len(evaluation["left"]["confusion_matrix"]) == 10
    # its time (a few minutes on the 2-core machine) is bench/digits_example.py's figure: on a busy
    # machine (406 s seen with another run and a core kept busy) a timed assert only measures the load
    # the per-epoch metrics are stored for the Metrics pane, one per epoch run
    top1 = [e.data for e in run.events.filter(node_id="train", type="metric") if e.data["name"] == "validation_top1_accuracy"]
    assert [m["step"] for m in top1] == list(range(1, model["epochs_run"] + 1))
