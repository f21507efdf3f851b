"""Issue 29: deploying with an entry script through the API: what is refused, by field, before
anything runs (a script that does not compile, lacks init() or run(raw_data), is too large or has a
bad file name; a user without the permission to run code; a model folder of its own without a
script), and a switch to another script. tests/serving/test_entry_scripts.py serves them."""
from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from designer.pipelines.endpoints import entry_scripts
from designer.pipelines.models import Endpoint, ModelVersion, RegisteredModel
from tests.conftest import may_add_components

pytestmark = pytest.mark.django_db
SCRIPT = "import json\n\ndef init():\n    pass\n\ndef run(raw_data):\n    return json.loads(raw_data)\n"


@pytest.fixture
def version(users):
    m = RegisteredModel.objects.create(owner=users["owner"], name="chickens")
    return ModelVersion.objects.create(model=m, version=1, folder=f"models/{users['owner'].id}/{m.id}/1", status="ready",
                                       format="pytorch")


def deploy(client, **body):
    return client.post("/api/endpoints", {"model": "chickens", "version": 1, **body}, content_type="application/json")


@pytest.mark.parametrize("body, status, error", [
    ({"entry_script": 12}, 400, "entry_script: the script's Python source (text), got int"),
    ({"entry_script": SCRIPT, "entry_script_name": "../score.py"}, 400, "entry_script_name: '../score.py' is not usable"),
    ({"entry_script": SCRIPT, "entry_script_name": ["x"]}, 400, "entry_script_name: "),
    ({"entry_script": "def run(raw_data):\n    return 1\n"}, 400, "entry_script: score.py defines no init() at its top level"),
    ({"entry_script": "def init():\n    pass\n"}, 400, "entry_script: score.py defines no run(raw_data)"),
    ({"entry_script": "def init():\n    pass\n\n\ndef run():\n    return 1\n"}, 400, "entry_script: score.py, line 5: run must be"),
    ({"entry_script": "def init(:\n"}, 400, "entry_script: score.py, line 1: "),
    ({"entry_script": "x = 1\x00\n"}, 400, "the request body is not usable: it holds a NUL character (\\u0000) at entry_script"),
    ({"entry_script": "#" * (entry_scripts.MAX_BYTES + 1)}, 413, "the limit is 256 KB"),
    ({}, 400, "is a model folder of its own (pytorch), not an ONNX image classifier: deploy it with an entry script"),
])
def test_a_bad_entry_script_is_refused_naming_the_field(owner_client, users, version, body, status, error):
    may_add_components(users["owner"])
    r = deploy(owner_client, **body)
    assert r.status_code == status and error in r.json()["error"], r.json()
    assert not Endpoint.objects.exists()


def test_an_entry_script_needs_the_permission_to_run_code_and_a_strangers_model_is_none(owner_client, stranger_client, users, version):
    r = deploy(owner_client, entry_script=SCRIPT)
    assert r.status_code == 403 and "needs the permission to add components" in r.json()["error"]
    may_add_components(users["stranger"])
    assert deploy(stranger_client, entry_script=SCRIPT).status_code == 404


def test_an_endpoint_switches_to_another_script_and_says_which_serves_it(owner_client, users, version):
    may_add_components(users["owner"])
    e = deploy(owner_client, entry_script=SCRIPT, entry_script_name="pytorch_score.py").json()
    assert (e["name"], e["entry_script"], e["format"]) == ("chickens", "pytorch_score.py", "pytorch")
    assert "-d '{\"data\": [[0.1, 0.2]]}'" in e["curl"] and "image=@" not in e["curl"]
    r = owner_client.patch("/api/endpoints/chickens", {"entry_script": SCRIPT.replace("pass", "print('v2')"),
                                                       "entry_script_name": "v2.py"}, content_type="application/json")
    assert r.status_code == 200 and r.json()["entry_script"] == "v2.py"
    endpoint = Endpoint.objects.get(name="chickens")
    assert endpoint.revision == 2 and "print('v2')" in endpoint.entry_script
    r = owner_client.patch("/api/endpoints/chickens", {"entry_script": ""}, content_type="application/json")
    assert r.status_code == 400 and "deploy it with an entry script" in r.json()["error"]  # no ONNX path for it
    r = owner_client.patch("/api/endpoints/chickens", {"entry_script": "def init(:"}, content_type="application/json")
    assert r.status_code == 400 and r.json()["error"].startswith("entry_script: score.py, line 1")
    assert Endpoint.objects.get(name="chickens").revision == 2  # refused: unchanged


def test_registering_names_the_output_port_as_text(owner_client):
    r = owner_client.post("/api/models", {"run": 1, "node": "fit", "name": "m", "output": ["model"]}, content_type="application/json")
    assert r.status_code == 400 and r.json()["error"] == "`output` is the name of the node's output port (text), got list"


@pytest.fixture
def component_run(users, settings):
    """A completed run of a component with two model outputs (a torch.save folder, an ONNX file) and a plain folder."""
    from designer.pipelines.models import NodeRun, Run
    from sdk.formats.meta import write_meta

    Path(settings.ARTIFACT_ROOT).mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="entry-script-test-", dir=settings.ARTIFACT_ROOT))
    outputs = {}
    for port, kind, files in (("weights", "ModelDirectory", {"model.pt": b"w"}), ("graph", "OnnxModel", {"net.onnx": b"g"}),
                              ("report", "AnyDirectory", {"report.txt": b"r"})):
        folder = root / "fit" / port
        folder.mkdir(parents=True)
        for name, data in files.items():
            (folder / name).write_bytes(data)
        write_meta(folder, kind)
        outputs[port] = str(folder)
    run = Run.objects.create(owner=users["owner"], name="r", status="completed",
                             snapshot={"nodes": [{"id": "fit", "kind": "not_installed_any_more", "parameters": {"epochs": 3}},
                                                 {"id": "score", "kind": "score_image_model", "parameters": {}}], "links": []})
    NodeRun.objects.create(run=run, node_id="fit", kind="not_installed_any_more", status="completed", outputs=outputs)
    NodeRun.objects.create(run=run, node_id="score", kind="score_image_model", status="completed", outputs=outputs)
    return run


@pytest.mark.parametrize("output, status, error", [
    (None, 400, "has 2 model outputs (weights, graph): say which one with `output`"),
    ("report", 400, "the output 'report' of not_installed_any_more (fit) is a AnyDirectory, not a model: register the output"),
    ("nope", 400, "has no output 'nope': its outputs are weights, graph, report"),
])
def test_a_components_model_output_is_named_where_it_has_several(owner_client, component_run, output, status, error):
    r = owner_client.post("/api/models", {"run": component_run.id, "node": "fit", "name": "m", "output": output},
                          content_type="application/json")
    assert r.status_code == status and error in r.json()["error"], r.json()


def test_each_model_output_of_a_component_registers_with_its_format(owner_client, component_run):
    formats = {}
    for port in ("weights", "graph"):
        r = owner_client.post("/api/models", {"run": component_run.id, "node": "fit", "name": "m", "output": port},
                              content_type="application/json")
        assert r.status_code == 201, r.json()
        formats[port] = (r.json()["format"], r.json()["status"], r.json()["lineage"]["parameters"])
    assert formats == {"weights": ("pytorch", "ready", {"epochs": 3}), "graph": ("onnx", "ready", {"epochs": 3})}
    # a built-in module's output is no model to register, whatever its folder's type
    r = owner_client.post("/api/models", {"run": component_run.id, "node": "score", "name": "m", "output": "weights"},
                          content_type="application/json")
    assert r.status_code == 400 and "Score Image Model (score) outputs no model" in r.json()["error"]


def test_register_model_names_a_components_output(component_run):
    from io import StringIO

    from django.core.management import call_command

    out, err = StringIO(), StringIO()
    call_command("register_model", str(component_run.id), "fit", name="m", owner="owner", output="graph", stdout=out, stderr=err)
    assert out.getvalue().strip() == "m:1" and "(onnx)" in err.getvalue() and "status: ready" in err.getvalue()


def test_a_components_lineage_names_the_datasets_upstream_of_each_input(users):
    from designer.pipelines.models import Dataset
    from designer.pipelines.registry import lineage
    from tests.pipes import link, node, pipeline

    train = Dataset.objects.create(owner=users["owner"], name="chickens-train", file="x.zip")
    doc = pipeline([node("d1", "dataset", dataset=train.id), node("d2", "dataset", dataset=999999),
                    node("convert", "convert_to_image_directory"), node("fit", "pytorch_train")],
                   [link("d1", "convert", "dataset", "input_dataset", lid="a"), link("convert", "fit", "image_directory", "training_data", lid="b"),
                    link("d2", "fit", "dataset", "validation_data", lid="c")])
    found = lineage._datasets(doc, "fit")
    assert found == {"training": [{"id": train.id, "name": "chickens-train", "node": "d1", "version": 1}],
                     "validation": [{"id": 999999, "name": "dataset 999999 (deleted)", "node": "d2"}]}
