"""Issue 29: any model registers and deploys. A component's output declared as a model (the
example examples/components/pytorch_score: a whole model saved by torch.save) is registered with
its lineage, deployed with the original's entry script (pytorch_score.py, unchanged) and scored
over HTTP by a real serving process; a script's error names the endpoint and the script's line,
and one endpoint's script that dies or hangs breaks no other."""
import json
import os
import time
from pathlib import Path

import pytest

from designer.engine import statuses as st
from designer.pipelines.endpoints import service as endpoints
from designer.pipelines.models import Endpoint, Event
from designer.pipelines.runs import service as runs
from designer.serving import scripts
from designer.serving.scripts import ScriptDeployment, ScriptError, ScriptLimits
from tests.conftest import ROOT, may_add_components, wait_for_run
from tests.pipes import node, pipeline
from tests.serving.helpers import request, score_url

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(300)]
EXAMPLE = ROOT / "examples" / "components" / "pytorch_score"
SCRIPT = (EXAMPLE / "pytorch_score.py").read_text()
LINE_OF_DATA = next(i for i, line in enumerate(SCRIPT.splitlines(), 1) if "['data']" in line)
DIES = "import os\n\ndef init():\n    pass\n\ndef run(raw_data):\n    os._exit(3)\n"
FAILS = "def init():\n    global ready\n    ready = False\n    raise RuntimeError('no GPU here')\n\ndef run(raw_data):\n    return ready\n"
CHICKEN, TURKEY = [[1.0, 1.0, -1.0, 0.0]], [[-1.0, -1.0, 1.0, 0.5]]


@pytest.fixture
def trained(shared_worker, users):
    """The example component run once on a real worker (8 epochs of a small network)."""
    doc = pipeline([node("fit", "pytorch_score_train", num_epochs=8)], [], name="chickens")
    run = wait_for_run(runs.submit(users["owner"], doc).id, timeout=120)
    assert run.status == st.COMPLETED, run.nodes.get(node_id="fit").error
    return run


def post(client, path: str, body: dict):
    return client.post(path, body, content_type="application/json")


def score(serving, endpoint: Endpoint, body: bytes):
    status, document, _ = request(score_url(serving, endpoint), body, "application/json", key=endpoint.primary_key)
    return status, document


def test_a_components_torch_save_model_registers_and_its_entry_script_answers_over_http(owner_client, users, trained, serving):
    r = post(owner_client, "/api/models", {"run": trained.id, "node": "fit", "name": "chickens"})
    assert r.status_code == 201, r.json()
    version = r.json()
    assert (version["format"], version["status"], version["has_onnx"]) == ("pytorch", "ready", False)
    lineage = version["lineage"]
    assert lineage["node"]["kind"] == "pytorch_score_train" and lineage["parameters"]["num_epochs"] == 8
    logged = [d["value"] for d in Event.objects.filter(run=trained, node_id="fit", type="metric", data__name="best_val_acc")
              .order_by("id").values_list("data", flat=True)]
    assert lineage["metrics"]["best_val_acc"] == logged[-1] and set(lineage["metrics"]) == {"best_val_acc", "val_acc", "loss"}

    # not an ONNX image classifier: the entry script is what serves it, and deploying code needs the permission
    r = post(owner_client, "/api/endpoints", {"model": "chickens", "version": 1})
    assert r.status_code == 400 and "deploy it with an entry script" in r.json()["error"]
    body = {"model": "chickens", "version": 1, "name": "chickens", "entry_script": SCRIPT, "entry_script_name": "pytorch_score.py"}
    r = post(owner_client, "/api/endpoints", body)
    assert r.status_code == 403 and r.json()["error"].startswith("entry_script: ")
    may_add_components(users["owner"])
    r = post(owner_client, "/api/endpoints", {**body, "entry_script": "def init():\n    pass\n\ndef run(raw_data)\n    return 1\n"})
    assert r.status_code == 400 and r.json()["error"] == "entry_script: pytorch_score.py, line 4: expected ':'"
    r = post(owner_client, "/api/endpoints", body)
    assert r.status_code == 201, r.json()
    assert r.json()["entry_script"] == "pytorch_score.py" and '{"data"' in r.json()["curl"]

    endpoint = Endpoint.objects.get(name="chickens")
    serving.wait_serving(endpoint)
    status, answer = score(serving, endpoint, json.dumps({"data": CHICKEN}).encode())
    assert status == 200 and answer["label"] == "chicken", (status, answer)
    status, answer = score(serving, endpoint, json.dumps({"data": TURKEY}).encode())
    assert status == 200 and answer["label"] == "turkey" and 0.5 < float(answer["probability"]) <= 1
    status, answer = score(serving, endpoint, b'{"images": []}')  # run() raises: its line, no traceback
    assert (status, answer["error"]) == (500, f"endpoint 'chickens': pytorch_score.py, line {LINE_OF_DATA}, in run: KeyError: 'data'")
    status, answer = score(serving, endpoint, b"\xff\xfe")
    assert status == 400 and "must be UTF-8" in answer["error"]

    # one endpoint's script that dies, or whose init() fails, breaks no other endpoint
    dies, fails = (endpoints.create(users["owner"], "chickens", 1, name, script, "score.py")
                   for name, script in (("dies", DIES), ("fails", FAILS)))
    serving.wait_serving(dies)
    status, answer = score(serving, dies, b'{"data": 1}')
    assert status == 502 and answer["error"].startswith("endpoint 'dies': the process of score.py ended while answering (exit code 3)")
    assert score(serving, dies, b'{"data": 1}')[0] == 502  # started again (init() again), and it dies again
    reason = "score.py, line 4, in init: RuntimeError: no GPU here"
    deadline = time.monotonic() + 60
    while endpoints.status(fails)[0] != st.FAILED and time.monotonic() < deadline:
        time.sleep(0.1)
    state, message = endpoints.status(fails)
    assert state == st.FAILED and f"endpoint 'fails': {reason}" in message, message
    status, answer = score(serving, fails, b'{"data": 1}')
    assert status == 503 and reason in answer["error"]
    assert score(serving, endpoint, json.dumps({"data": CHICKEN}).encode())[1]["label"] == "chicken"  # still answering


# --------------------------------------------------------------------------- the script's process alone

PLAIN = """\
import json, os, sys, time
from azureml.core.model import Model
def init():
    global folder
    folder = Model.get_model_path("plain")  # the original's way: AZUREML_MODEL_DIR
    print("init: printed, not answered")
def run(raw_data):
    data = json.loads(raw_data)
    if data.get("sleep"):
        time.sleep(data["sleep"])
    if data.get("exit"):
        sys.exit(2)
    if data.get("set"):
        return {1, 2}
    if data.get("big"):
        return "x" * data["big"]
    print("a print in run()")
    return {"folder": folder, "echo": data, "secret": os.environ.get("SECRET_KEY"), "db": os.environ.get("DATABASE_URL")}
"""


def test_the_scripts_process_answers_in_order_and_survives_its_own_mistakes(tmp_path, monkeypatch):
    monkeypatch.setenv("SECRET_KEY", "not for scripts")
    monkeypatch.setenv("DATABASE_URL", "postgres://not-for-scripts")
    d = ScriptDeployment("plain", 1, (1, "x"), tmp_path, PLAIN, "score.py", ScriptLimits(init_seconds=30, run_seconds=1))
    try:
        assert json.loads(d._exchange('{"x": [1, 2]}')) == {"folder": str(tmp_path), "echo": {"x": [1, 2]}, "secret": None, "db": None}
        with pytest.raises(ScriptError, match=r"^endpoint 'plain': score.py: run\(\) returned a set, which cannot be answered as JSON") as e:
            d._exchange('{"set": true}')
        assert e.value.status == 500
        with pytest.raises(ScriptError, match=r"^endpoint 'plain': score.py, line 12, in run: SystemExit: 2$"):
            d._exchange('{"exit": true}')  # sys.exit in run(): the request's error, the process goes on
        pid = d.proc.pid
        with pytest.raises(ScriptError, match=r"did not answer within 1 s \(setting SERVING_SCRIPT_SECONDS\)") as e:
            d._exchange('{"sleep": 30}')
        assert e.value.status == 504 and not os.path.exists(f"/proc/{pid}/cmdline")  # ended
        assert json.loads(d._exchange('{"y": 3}'))["echo"] == {"y": 3}  # started again (init() again)
        monkeypatch.setattr(scripts, "MAX_ANSWER_BYTES", 1000)
        with pytest.raises(ScriptError, match=r"run\(\) of score.py answered 0 MB, more than the 0 MB an answer may be") as e:
            d._exchange('{"big": 2000}')
        assert e.value.status == 502 and json.loads(d._exchange('{"z": 1}'))["echo"] == {"z": 1}
    finally:
        d._stop()
    assert not Path(d.home).exists()


# --------------------------------------------------------------------------- an MLflow model (issue 43, item 3)


def test_a_model_kept_by_mlflow_log_model_registers_and_deploys_without_an_entry_script(owner_client, users, shared_worker,
                                                                                     serving):
    """examples/components/mlflow_pytorch, an Azure ML v2 file: its script's log_model fills its mlflow_model output
    (one made for the node where none is declared: tests/modules/test_mlflow_models.py)."""
    doc = pipeline([node("fit", "mlflow_pytorch_train", num_epochs=8)], [], name="birds")
    run = wait_for_run(runs.submit(users["owner"], doc).id, timeout=120)
    fit = run.nodes.get(node_id="fit")
    assert run.status == st.COMPLETED and set(fit.outputs) == {"model"}, fit.error
    r = post(owner_client, "/api/models", {"run": run.id, "node": "fit", "name": "birds"})
    assert r.status_code == 201, r.json()
    assert (r.json()["format"], r.json()["status"]) == ("mlflow", "ready")
    assert set(r.json()["lineage"]["metrics"]) == {"loss", "val_acc"}

    # no entry script, and so no permission to deploy code: the designer's MLflow scoring serves it
    r = post(owner_client, "/api/endpoints", {"model": "birds", "version": 1})
    assert r.status_code == 201, r.json()
    assert r.json()["format"] == "mlflow" and r.json()["entry_script"] is None
    assert '{"input_data": [[' in r.json()["curl"] and r.json()["curl"].startswith("# input_data: a placeholder")
    endpoint = Endpoint.objects.get(name="birds")
    serving.wait_serving(endpoint)
    status, answer = score(serving, endpoint, json.dumps({"input_data": CHICKEN + TURKEY}).encode())
    assert status == 200 and len(answer) == 2, (status, answer)
    assert answer[0][0] > 0.5 > answer[1][0] and abs(sum(answer[0]) - 1) < 1e-5  # chicken, then turkey
    status, split = score(serving, endpoint, json.dumps({"input_data": {"columns": list("abcd"), "data": CHICKEN}}).encode())
    assert status == 200 and abs(split[0][0] - answer[0][0]) < 1e-6
    status, answer = score(serving, endpoint, b'{"images": []}')
    assert status == 400 and answer["error"].startswith(
        "endpoint 'birds': mlflow_score.py: the request cannot be scored: expected JSON {\"input_data\": [[...], ...]}")
    status, answer = score(serving, endpoint, b'{"input_data": [[1, 2]]}')
    assert status == 400 and "the model cannot score this input" in answer["error"] and "(1, 2)" in answer["error"]
