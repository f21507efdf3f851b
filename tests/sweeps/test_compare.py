"""Comparing runs (GET /api/runs/compare and the page /runs/compare): what differs, the metrics
side by side, and who may compare what. The runs are real: submitted and run inline on the toy
modules."""
import pytest

from designer.pipelines.models import Pipeline
from designer.pipelines.runs import service as runs
from tests.pipes import link, node, pipeline

pytestmark = pytest.mark.django_db


def trainer(epochs=3, amount=1, extra=False):
    """toy_training (loss and accuracy per epoch) beside a source feeding an add."""
    nodes = [node("t", "toy_training", epochs=epochs, epoch_seconds=0), node("src", "toy_source", value=1),
             node("add", "toy_add", amount=amount)]
    links = [link("src", "add")]
    if extra:
        nodes.append(node("add2", "toy_add"))
        links.append(link("add", "add2"))
    return pipeline(nodes, links)


def submit(user, doc, p=None):
    p = p or Pipeline.objects.create(owner=user, name="p", draft=doc)
    return runs.submit(user, doc, pipeline=p, name=p.name, inline=True)


def compare(client, *ids):
    return client.get("/api/runs/compare", {"runs": ",".join(str(i) for i in ids)})


def test_it_lists_only_the_parameters_that_differ_with_defaults_filled_in(owner_client, users):
    p = Pipeline.objects.create(owner=users["owner"], name="p", draft=trainer())
    a = submit(users["owner"], trainer(epochs=3, amount=1), p)
    b = submit(users["owner"], trainer(epochs=5, amount=1), p)
    # amount given as the default it already had (1): not a difference
    doc = trainer(epochs=3)
    del doc["nodes"][2]["parameters"]["amount"]
    c = submit(users["owner"], doc, p)
    r = compare(owner_client, c.id, a.id, b.id)
    assert r.status_code == 200, r.content
    data = r.json()
    assert [x["id"] for x in data["runs"]] == [a.id, b.id, c.id]  # oldest first, however picked
    assert data["runs"][0] == {"id": a.id, "name": "p", "pipeline": p.id, "status": "completed", "shown_status": "completed",
                               "submitted_at": a.submitted_at.isoformat(), "parameters": {}, "trial": None}
    rows = {d["key"]: d for d in data["differences"]}
    assert list(rows) == ["node:t:toy_training:epochs"], rows
    assert rows["node:t:toy_training:epochs"] == {"key": "node:t:toy_training:epochs", "label": "Toy training: Epochs",
                                                  "values": [3, 5, 3]}


def test_a_node_one_run_lacks_shows_as_null_and_runs_of_two_pipelines_line_up(owner_client, users):
    a = submit(users["owner"], trainer(amount=2))
    b = submit(users["owner"], trainer(amount=7, extra=True))  # another pipeline, one node more
    assert a.pipeline_id != b.pipeline_id
    data = compare(owner_client, a.id, b.id).json()
    rows = {d["label"]: d["values"] for d in data["differences"]}
    assert rows["Toy add (add): Amount"] == [2, 7]
    assert rows["Toy add (add2): Amount"] == [None, 1]
    assert rows["Toy add (add2): Fail"] == [None, False]
    assert not any(label.startswith(("Toy training", "Toy source")) for label in rows)


def test_pipeline_parameter_values_and_run_settings_that_differ_are_rows(owner_client, users):
    a = submit(users["owner"], trainer())
    b = submit(users["owner"], trainer())
    # values as a run with pipeline parameters and distributed settings stores them
    a.parameter_values = {"learning_rate": 0.01, "batch_size": 32}
    b.parameter_values = {"learning_rate": 0.001, "batch_size": 32}
    b.snapshot["nodes"][0]["run_settings"] = {"process_count_per_node": 2}
    a.save()
    b.save()
    data = compare(owner_client, a.id, b.id).json()
    rows = {d["label"]: d["values"] for d in data["differences"]}
    assert rows == {"Pipeline parameter learning_rate": [0.01, 0.001],
                    "Toy training: Process count per node": [1, 2]}
    assert data["runs"][0]["parameters"] == {"learning_rate": 0.01, "batch_size": 32}


def test_every_metric_comes_with_its_final_value_and_its_curve_per_run(owner_client, users):
    a = submit(users["owner"], trainer(epochs=2))
    b = submit(users["owner"], trainer(epochs=4))
    metrics = compare(owner_client, a.id, b.id).json()["metrics"]
    by_label = {m["label"]: m for m in metrics}
    assert list(by_label) == ["Toy training: loss", "Toy training: accuracy", "Toy add: total"]
    loss = by_label["Toy training: loss"]
    assert loss["node"] == "t" and loss["name"] == "loss" and loss["goal"] == "minimize" and loss["step"] == "step"
    assert loss["final"] == [0.5, 0.25]
    assert loss["curves"] == [[[1, 1.0], [2, 0.5]], [[1, 1.0], [2, 0.5], [3, 1 / 3], [4, 0.25]]]
    assert by_label["Toy training: accuracy"]["goal"] == "maximize"
    # the second run reused `add` of the first: its metric is the one that computed the output
    assert b.nodes.get(node_id="add").status == "reused"
    total = by_label["Toy add: total"]
    assert total["final"] == [2.0, 2.0] and total["curves"] == [[[1, 2.0]], [[1, 2.0]]] and total["goal"] is None


def test_a_run_without_a_metric_has_null_and_an_empty_curve(owner_client, users):
    a = submit(users["owner"], trainer(epochs=2))
    b = submit(users["owner"], pipeline([node("src", "toy_source", value=3)], []))
    metrics = {m["label"]: m for m in compare(owner_client, a.id, b.id).json()["metrics"]}
    assert metrics["Toy training: loss"]["final"] == [0.5, None]
    assert metrics["Toy training: loss"]["curves"][1] == []


def test_a_strangers_run_answers_404_naming_nothing_of_theirs(owner_client, users):
    mine = submit(users["owner"], trainer())
    theirs = submit(users["stranger"], trainer())
    theirs.name = "secret project"
    theirs.save()
    for ids in ((mine.id, theirs.id), (mine.id, 999999)):
        r = compare(owner_client, *ids)
        assert r.status_code == 404
        assert r.json() == {"error": f"run {ids[1]} not found"}
    page = owner_client.get("/runs/compare", {"runs": f"{mine.id},{theirs.id}"})
    assert page.status_code == 404 and b"secret" not in page.content and b"stranger" not in page.content


def test_fewer_than_two_runs_or_a_bad_id_answers_400_saying_so(owner_client, users):
    a = submit(users["owner"], trainer())
    r = compare(owner_client, a.id)
    assert r.status_code == 400 and r.json()["error"] == f"comparing needs at least 2 runs: only run {a.id} was given (e.g. ?runs=4,7)"
    assert compare(owner_client, a.id, a.id).status_code == 400  # the same run twice is one run
    r = owner_client.get("/api/runs/compare")
    assert r.status_code == 400 and "no run was given" in r.json()["error"]
    r = owner_client.get("/api/runs/compare", {"runs": f"{a.id},x7"})
    assert r.status_code == 400 and r.json()["error"].startswith("runs: 'x7' is not a run id")
    r = owner_client.get("/api/runs/compare", {"runs": ",".join(str(i) for i in range(1, 12))})
    assert r.status_code == 400 and "at most 10 runs" in r.json()["error"]
    assert owner_client.get("/api/runs/compare", {"runs": "9" * 40}).status_code == 400


def test_a_visitor_must_sign_in(client, users):
    assert client.get("/api/runs/compare", {"runs": "1,2"}).status_code == 401
    assert client.get("/runs/compare", {"runs": "1,2"}).status_code == 302


def test_the_page_takes_the_check_boxes_of_the_runs_list(owner_client, users):
    a = submit(users["owner"], trainer(epochs=2))
    b = submit(users["owner"], trainer(epochs=3))
    r = owner_client.get(f"/runs/compare?runs={a.id}&runs={b.id}")
    assert r.status_code == 200
    assert b'id="compare-boot"' in r.content and b"Toy training: Epochs" in r.content
    home = owner_client.get("/").content.decode()
    assert f'name="runs" value="{a.id}"' in home and 'action="/runs/compare"' in home
    one = owner_client.get(f"/runs/compare?runs={a.id}")
    assert one.status_code == 400 and b"only run" in one.content


def test_a_training_nodes_curves_are_by_epoch():
    """The curves' x axis says what a step counts: Train PyTorch Model reports per epoch."""
    from designer.pipelines.sweeps.compare import _metric_row
    from modules import catalogue as module_catalogue

    cat = module_catalogue.load()
    assert _metric_row("train", "train_pytorch_model", "validation_loss", 2, cat)["step"] == "epoch"
    assert _metric_row("gone", "no_such_module", "loss", 2, cat)["step"] == "step"


def test_a_node_that_kept_an_earlier_epoch_gives_that_epochs_value_as_the_sweep_page_does(owner_client, users):
    """Train PyTorch Model keeps the epoch of lowest validation loss: the value to compare is that
    epoch's (what the run hands on), not the last; the last stays given."""
    def tuner(lr, keep):
        return pipeline([node("fit", "toy_tuning", learning_rate=lr, epochs=4, epoch_seconds=0, keep_epoch=keep)], [])

    a = submit(users["owner"], tuner(0.01, keep=2))  # score by epoch: .5 .75 .833 .875; kept epoch 2
    b = submit(users["owner"], tuner(0.008, keep=4))  # .4 .6 .667 .7; kept its last
    score = {m["name"]: m for m in compare(owner_client, a.id, b.id).json()["metrics"]}["score"]
    assert score["final"] == pytest.approx([0.875, 0.7])
    assert score["kept_step"] == [2, 4] and score["kept"] == pytest.approx([0.75, 0.7])
    plain = submit(users["owner"], tuner(0.01, keep=0))  # says nothing of a kept epoch
    score = {m["name"]: m for m in compare(owner_client, a.id, plain.id).json()["metrics"]}["score"]
    assert score["kept_step"] == [2, None] and score["kept"][1] is None
