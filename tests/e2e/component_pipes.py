"""The example components (examples/components/) in pipelines for tests: scikit-learn's digits as
a dataset -> Convert to Image Directory -> Split Image Directory -> the component (training data:
the split's first output, validation data: its second) -> Score Image Model (on the second) ->
Evaluate Model. Small on purpose: 32 x 32 images, a few per class, two epochs."""
import io
import json
from pathlib import Path

import yaml
from django.conf import settings
from django.core.management import call_command

from sdk.formats import scored_dataset
from tests.conftest import ROOT
from tests.imagesets import digits_folder
from tests.pipes import link, node, out_path, pipeline

EXAMPLES = ROOT / "examples" / "components"
PER_CLASS = 8  # 80 images: 60 to train on, 20 to validate and score
FRACTION = 0.75
# what each example component is set to in the tests: two quick epochs on 32 x 32 images
PARAMETERS = {
    "pytorch_train": {"num_epochs": 2, "learning_rate": 0.01, "momentum": 0.9, "batch_size": 16, "image_size": 32,
                      "pretrained": False},
    "ddp_train": {"epochs": 2, "batch_size": 8, "learning_rate": 0.01, "image_size": 32, "arch": "resnet18"},
}
PARAMETERS["ddp_train_per_node"] = PARAMETERS["ddp_train"]  # the same script, started by a per-node launch


def digits_dataset(tmp_path, owner, name="digits") -> int:
    """An uploaded dataset of PER_CLASS digits per class; its id."""
    folder = digits_folder(Path(tmp_path) / name, per_class=PER_CLASS, size=32)
    out = io.StringIO()
    call_command("add_dataset", str(folder), owner=owner.username, name=name, stdout=out)
    return int(out.getvalue())


def trained_and_scored(kind: str, dataset_id: int | None, run_settings: dict | None = None, **params) -> dict:
    """dataset -> convert -> split -> train (the component `kind`) -> score -> evaluate."""
    train = node("train", kind, **{**PARAMETERS[kind], **params})
    if run_settings:
        train["run_settings"] = run_settings
    nodes = [node("dataset", "dataset", dataset=dataset_id), node("convert", "convert_to_image_directory"),
             node("split", "split_image_directory", fraction=FRACTION, random_seed=0), train,
             node("score", "score_image_model"), node("evaluate", "evaluate_model")]
    links = [link("dataset", "convert", "dataset", "input_dataset"),
             link("convert", "split", "image_directory", "image_directory"),
             link("split", "train", "results_dataset1", "training_data"),
             link("split", "train", "results_dataset2", "validation_data"),
             link("train", "score", "model", "trained_model"),
             link("split", "score", "results_dataset2", "dataset"),
             link("score", "evaluate", "scored_dataset", "scored_dataset")]
    return pipeline(nodes, links, name=f"digits with {kind}")


def run_headless(doc: dict, tmp_path, owner, name="pipeline.json") -> str:
    """`manage.py run_pipeline FILE --inline` as the owner; its output."""
    path = Path(tmp_path) / name
    path.write_text(json.dumps(doc))
    out = io.StringIO()
    call_command("run_pipeline", str(path), "--inline", "--owner", owner.username, stdout=out)
    return out.getvalue()


def logs_of(run, node_id="train") -> Path:
    return Path(settings.ARTIFACT_ROOT) / str(run.id) / node_id / "logs"


def metric_steps(run, node_id="train") -> dict[str, list]:
    """name -> the steps of its points, in the order reported."""
    found: dict[str, list] = {}
    for e in run.events.filter(node_id=node_id, type="metric").order_by("id"):
        found.setdefault(e.data["name"], []).append(e.data.get("step"))
    return found


def check_model_and_scores(run, ids: dict | None = None) -> dict:
    """The component's ModelDirectory is one Score Image Model read: 10 classes, weights, the
    figures; the scores and the evaluation cover the 20 held-out images. model.yaml returned.
    `ids`: the node ids of "train", "score" and "evaluate" when they are not these."""
    by_id = {n.node_id: n for n in run.nodes.all()}
    nodes = {role: by_id[(ids or {}).get(role, role)] for role in ("train", "score", "evaluate")}
    model_dir = out_path(nodes["train"].outputs["model"])
    info = yaml.safe_load((model_dir / "model.yaml").read_text())
    meta = yaml.safe_load((model_dir / "_meta.yaml").read_text())
    assert (model_dir / "model.pt").is_file()
    assert info["model_name"] == "resnet18" and info["classes"] == [str(d) for d in range(10)], info
    assert meta["type"] == "ModelDirectory" and meta["classes"] == info["classes"], meta
    assert 1 <= info["best_epoch"] <= 2 and len(info["history"]) == info["epochs_run"]
    assert (out_path(nodes["score"].outputs["scored_dataset"]) / scored_dataset.SCORED_FILE).is_file()
    evaluation = json.loads((out_path(nodes["evaluate"].outputs["evaluation_results"]) / "evaluation.json").read_text())
    held_out = 10 * PER_CLASS - round(10 * PER_CLASS * FRACTION)
    assert evaluation["left"]["count"] == held_out, evaluation["left"]
    return info
