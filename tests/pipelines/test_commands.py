"""Headless use: run_pipeline, export_pipeline, import_pipeline, as a user types them."""
import json
import os
import re
import subprocess
import sys
import time

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from designer.pipelines.models import Pipeline, Run
from sdk import component
from tests.conftest import ROOT, worker_database_url
from tests.pipes import chain, two_branches

pytestmark = pytest.mark.django_db


def write(tmp_path, doc, name="p.json"):
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return str(path)


def run_command(*args):
    from io import StringIO

    out, err = StringIO(), StringIO()
    try:
        call_command(*args, stdout=out, stderr=err)
        code = 0
    except CommandError as e:
        err.write(str(e))
        code = e.returncode
    return code, out.getvalue(), err.getvalue()


def test_run_pipeline_prints_each_status_and_succeeds(tmp_path):
    code, out, _ = run_command("run_pipeline", write(tmp_path, chain(3)), "--inline")
    assert code == 0, out
    run = Run.objects.get()
    assert "n2 (toy_add): completed" in out and f"\nrun {run.id} completed\n" in out
    lines = [(0, line) for line in out.splitlines()]
    assert [steps_of(lines, f"n{i} ({kind})") for i, kind in enumerate(["toy_source", "toy_add", "toy_add"])] == \
        [["queued", "running", "completed"]] * 3
    assert run.owner.username == "admin"  # the first user, made on a new machine
    # the file had no saved pipeline: it is saved as one, where the run opens; the last lines say
    # the final metrics and where to look
    assert run.pipeline.name == "chain" and run.pipeline.owner == run.owner
    assert "saved as the pipeline 'chain' of admin" in out
    assert out.endswith(f"run {run.id} completed\n  Toy add (n1): total 2\n  Toy add (n2): total 3\n"
                        f"open it at http://localhost:8000/pipelines/{run.pipeline_id}/?run={run.id}\n"), out


def test_run_pipeline_exits_non_zero_with_the_failing_nodes_error(tmp_path):
    code, out, err = run_command("run_pipeline", write(tmp_path, two_branches(fail_left=True)), "--inline")
    assert code == 1
    assert "node left (toy_add) failed:\nModuleError: asked to fail" in err
    assert "left2 (toy_add): not_run" in out and "right (toy_add): completed" in out


def run_on_workers(path, timeout=120):
    """`manage.py run_pipeline FILE` as a user types it (no --inline): each stdout line with the
    time it arrived, the exit code and stderr."""
    env = {**os.environ, "DATABASE_URL": worker_database_url(), "PYTHONUNBUFFERED": "1"}
    with subprocess.Popen([sys.executable, "manage.py", "run_pipeline", path, "--timeout", str(timeout)], cwd=ROOT, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        lines = [(time.monotonic(), line.rstrip("\n")) for line in proc.stdout]
        err = proc.stderr.read()
        return proc.wait(30), lines, err


def steps_of(lines, node_label):
    """['queued', 'running', ...]: the statuses printed for one node, in the order printed, after
    "pending" (printed only if the command looked before the node's inputs were ready)."""
    steps = [text.rsplit(": ", 1)[1] for _, text in lines if f" {node_label}: " in text]
    return steps[1:] if steps[:1] == ["pending"] else steps


@pytest.mark.production
@pytest.mark.django_db(transaction=True)
def test_run_pipeline_on_the_workers_prints_each_status_change_as_it_happens(tmp_path, start_worker):
    start_worker("headless")
    code, lines, err = run_on_workers(write(tmp_path, chain(3, sleep=4.0)))
    text = "\n".join(t for _, t in lines)
    assert code == 0, text + err
    assert steps_of(lines, "n0 (toy_source)") == ["queued", "running", "completed"], text
    for n in ("n1", "n2"):
        assert steps_of(lines, f"{n} (toy_add)") == ["queued", "running", "completed"], text
    run = Run.objects.get()
    assert f"run {run.id} completed" in text and run.status == "completed"
    assert lines[-1][1] == f"open it at http://localhost:8000/pipelines/{run.pipeline_id}/?run={run.id}"
    assert run.nodes.get(node_id="n2").worker.hostname.startswith("headless@")
    # printed while the run went on, not at the end: n0 finished about 8 s (n1 and n2) before the run
    n0_done = next(at for at, t in lines if t.endswith("n0 (toy_source): completed"))
    n2_running = next(at for at, t in lines if t.endswith("n2 (toy_add): running"))
    assert lines[-1][0] - n0_done > 1.2 and lines[-1][0] - n2_running > 0.5, text


@pytest.mark.production
@pytest.mark.django_db(transaction=True)
def test_run_pipeline_on_the_workers_exits_non_zero_with_the_failing_nodes_error(tmp_path, start_worker):
    start_worker("headless")
    code, lines, err = run_on_workers(write(tmp_path, two_branches(fail_left=True)))
    text = "\n".join(t for _, t in lines)
    assert code == 1, text + err
    assert "node left (toy_add) failed:\nModuleError: asked to fail (parameter Fail is on)" in err
    assert steps_of(lines, "left (toy_add)") == ["queued", "running", "failed"], text
    assert steps_of(lines, "left2 (toy_add)") == ["not_run"], text
    assert steps_of(lines, "right (toy_add)")[-1] == "completed", text
    assert f"run {Run.objects.get().id} failed" in text and Run.objects.get().status == "failed"
    assert lines[-1][1].startswith("open it at http://localhost:8000/pipelines/")


def test_set_overrides_a_parameter_and_regenerate_ignores_earlier_outputs(tmp_path):
    path = write(tmp_path, chain(2))
    run_command("run_pipeline", path, "--inline")
    code, out, _ = run_command("run_pipeline", path, "--inline", "--set", "n1.amount=7")
    assert code == 0 and "n0 (toy_source): reused" in out and "n1 (toy_add): completed" in out
    assert "Toy add: total 8" in out and "saved as" not in out  # the second run goes to the same pipeline
    code, out, _ = run_command("run_pipeline", path, "--inline", "--regenerate")
    assert "reused" not in out


@pytest.mark.parametrize("args,words", [
    (["--set", "n9.amount=1"], "no node 'n9'"),
    (["--set", "n1.amount=500"], "parameter 'amount': Amount: 500 is out of range: must be >= -100 and <= 100"),
    (["--set", "n1amount"], "expected NODE.PARAM=VALUE"),
])
def test_bad_overrides_are_explained_and_nothing_runs(tmp_path, args, words):
    code, _, err = run_command("run_pipeline", write(tmp_path, chain(2)), "--inline", *args)
    assert code == 1 and words in err
    assert not Run.objects.exists()


def test_an_invalid_file_lists_its_problems(tmp_path):
    doc = chain(2)
    doc["nodes"][1]["kind"] = "nope"
    (tmp_path / "bad.json").write_text("{oops")
    code, _, err = run_command("run_pipeline", str(tmp_path / "bad.json"))
    assert code == 1 and "not valid JSON" in err
    code, _, err = run_command("run_pipeline", write(tmp_path, doc))
    assert code == 1 and "node 'n1': unknown module kind 'nope'" in err


def test_export_and_import_round_trip_byte_for_byte(tmp_path, users):
    p = Pipeline.objects.create(owner=users["owner"], name="round trip", draft=two_branches())
    first, second = tmp_path / "1.json", tmp_path / "2.json"
    run_command("export_pipeline", str(p.id), str(first))
    code, out, _ = run_command("import_pipeline", str(first), "--owner", "owner")
    assert code == 0
    run_command("export_pipeline", out.strip(), str(second))
    assert first.read_bytes() == second.read_bytes()
    assert Pipeline.objects.get(pk=int(out)).draft == json.loads(first.read_text()) | {}
    # an exported pipeline run headless: its run is one of that pipeline's runs (its Runs tab, the
    # Pipelines page's link), whatever else carries the same name
    Pipeline.objects.create(owner=users["owner"], name="round trip", draft=chain(2))
    imported = Pipeline.objects.get(pk=int(out))  # the last saved of that name with these modules
    code, out, _ = run_command("run_pipeline", str(first), "--inline", "--owner", "owner")
    run = Run.objects.get()
    assert code == 0 and run.pipeline == imported and f"/pipelines/{imported.id}/?run={run.id}" in out


def test_import_refuses_an_invalid_file_and_creates_nothing(tmp_path):
    code, _, err = run_command("import_pipeline", write(tmp_path, {"schema_version": 99, "nodes": [], "links": []}))
    assert code == 1 and "newer Pipeline Designer" in err and not Pipeline.objects.exists()


def test_a_bad_setting_stops_start_up_naming_the_variable():
    for name, value in [("DATABASE_URL", "mysql://x/y"), ("CELERY_BROKER_URL", "kafka://x"),
                        ("CHANNEL_LAYER_URL", "memory://"), ("HEARTBEAT_SECONDS", "often"), ("ARTIFACT_ROOT", "relative/path"),
                        ("DEBUG", "maybe")]:
        out = subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, capture_output=True, text=True,
                             env={"PATH": "/usr/bin:/bin", name: value})
        assert out.returncode != 0 and f"{name}=" in out.stderr, (name, out.stderr[-500:])


WEB_SESSION = """
import json, sys
from pathlib import Path

import django

django.setup()
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client
from django.test.utils import setup_test_environment

from designer.pipelines.models import NodeRun, Pipeline, Run

setup_test_environment()
call_command("migrate", verbosity=0)
user = get_user_model().objects.create_user("web")
doc = json.loads(Path("examples/digits.json").read_text())
p = Pipeline.objects.create(owner=user, name="digits", draft=doc)
run = Run.objects.create(owner=user, pipeline=p, name="digits", snapshot=doc, status="completed")
outputs = {
    "split": ("ImageDirectory", {"index.csv": "path,label\\nimg/0.png,zero\\n", "img/0.png": "not really a png"}),
    "score": ("ScoredDataset", {"scored.csv": "Image,Label,Scored Probabilities_zero,Scored Labels\\na.png,zero,0.9,zero\\n"}),
    "evaluate": ("EvaluationResults", {"evaluation.json": json.dumps({"left": {
        "classes": ["zero"], "count": 1, "overall": {"accuracy": 1.0}, "confusion_matrix": [[1]],
        "per_class": [{"class": "zero", "precision": 1.0, "recall": 1.0, "f1": 1.0, "support": 1}]}})}),
}
for node_id, (port_type, files) in outputs.items():
    out = Path(settings.ARTIFACT_ROOT) / str(run.id) / node_id / "out"
    for name, text in {**files, "_meta.yaml": f"type: {port_type}\\n"}.items():
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_text(text)
    NodeRun.objects.create(run=run, node_id=node_id, kind=port_type, status="completed", outputs={"out": str(out)})

c = Client()
c.force_login(user)
answers = {
    "home": c.get("/"),
    "designer": c.get(f"/pipelines/{p.id}/"),
    "modules": c.get("/api/modules"),
    "validate": c.post("/api/validate", json.dumps(doc), content_type="application/json"),
    "load": c.get(f"/api/pipelines/{p.id}"),
    "compute": c.get("/compute"),
    "models": c.get("/models/"),
    "endpoints": c.get("/endpoints/"),
    "models api": c.get("/api/models"),
    "endpoints api": c.get("/api/endpoints"),
    "image": c.get(f"/runs/{run.id}/nodes/split/images/out/0"),
    **{f"pane {n['id']}": c.post(f"/pipelines/{p.id}/pane", {"node": json.dumps(n)}) for n in doc["nodes"]},
    **{f"visualize {n}": c.get(f"/runs/{run.id}/nodes/{n}/visualize") for n in outputs},
}
kinds = {m["kind"] for m in answers["modules"].json()["modules"]}
answers.update({f"pane of a new {k}": c.post(f"/pipelines/{p.id}/pane", {"node": json.dumps({"id": "new", "kind": k})})
                for k in kinds})
bad = {name: r.status_code for name, r in answers.items() if r.status_code != 200}
shown = {n: answers[f"visualize {n}"].content.decode() for n in outputs}
assert "1 image(s)" in shown["split"] and "1 row(s)" in shown["score"] and "confusion" in shown["evaluate"], shown
print(json.dumps({"bad": bad, "kinds": len(kinds), "panes": sum(k.startswith("pane ") for k in answers),
                  "heavy": sorted(m for m in ("torch", "torchvision", "onnxruntime") if m in sys.modules)}))
"""


def test_the_web_process_never_imports_torch(tmp_path):
    """A web process that served the pages (the models and endpoints pages too), the catalogue, the
    parameter pane of every module type (the example components too) and Visualize of a real pipeline (examples/digits.json) has
    imported neither torch nor ONNX Runtime."""
    script = tmp_path / "web_session.py"
    script.write_text(WEB_SESSION)
    env = {"PATH": "/usr/bin:/bin", "DJANGO_SETTINGS_MODULE": "designer.settings", "DESIGNER_DATA_DIR": str(tmp_path / "var"),
           "ARTIFACT_ROOT": str(tmp_path / "artifacts"), "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, str(script)], cwd=ROOT, capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    examples = len(component.find(ROOT / "examples" / "components"))  # each example component is a kind too
    assert result == {"bad": {}, "kinds": 12 + examples, "panes": 10 + 12 + examples, "heavy": []}, out.stderr[-3000:]


# ---------------------------------------------------------------- a new machine


def manage(data_dir, *args, timeout=300, **env_vars):
    """`manage.py ARGS` as a user types it on a new machine: an empty data folder, SQLite."""
    env = {"PATH": "/usr/bin:/bin", "DESIGNER_DATA_DIR": str(data_dir), "DESIGNER_EXTRA_MODULES": "tests.toy_modules", **env_vars}
    return subprocess.run([sys.executable, "manage.py", *map(str, args)], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)


def usernames(data_dir) -> list[str]:
    import sqlite3

    with sqlite3.connect(data_dir / "designer.sqlite3") as db:
        return [name for (name,) in db.execute("SELECT username FROM auth_user ORDER BY id")]


def test_on_a_new_machine_add_dataset_then_run_pipeline_set_up_the_database_and_work(tmp_path):
    data = tmp_path / "new"
    folder = tmp_path / "pets" / "cats"
    folder.mkdir(parents=True)
    (folder / "1.png").write_bytes(b"not really a png")
    out = manage(data, "add_dataset", tmp_path / "pets")
    assert out.returncode == 0, out.stderr[-3000:]
    assert "no such table" not in out.stderr and "Setting up the database first" in out.stderr
    assert "Created the first user: sign in as admin / " in out.stderr  # as `make run` does
    assert out.stdout.strip() == "1"  # stdout is the dataset id alone: scripts read it
    assert [p.name for p in (data / "artifacts" / "datasets" / "1").rglob("*.zip")] == ["pets.zip"]
    out = manage(data, "run_pipeline", write(tmp_path, chain(2)), "--inline")
    assert out.returncode == 0, out.stdout + out.stderr[-3000:]
    assert "\nrun 1 completed\n" in out.stdout and "Setting up" not in out.stderr
    assert usernames(data) == ["admin"]


def test_on_a_new_machine_run_pipeline_sets_up_the_database_and_runs(tmp_path):
    data = tmp_path / "new"
    out = manage(data, "run_pipeline", write(tmp_path, chain(2)), "--inline", SITE_URL="https://designer.example.com/")
    assert out.returncode == 0, out.stdout + out.stderr[-3000:]
    assert "no such table" not in out.stderr and "Setting up the database first" in out.stderr
    assert "n1 (toy_add): completed" in out.stdout and "\nrun 1 completed\n" in out.stdout
    assert out.stdout.endswith("\nopen it at https://designer.example.com/pipelines/1/?run=1\n")  # the site's address
    # without SITE_URL: the address `make run` serves on (PORT=9000), which it left in the data folder
    (data / "site-url").write_text("http://127.0.0.1:9000\n")
    out = manage(data, "run_pipeline", write(tmp_path, chain(2)), "--inline")
    assert out.stdout.endswith("\nopen it at http://127.0.0.1:9000/pipelines/1/?run=2\n"), out.stdout + out.stderr[-3000:]


def test_a_database_with_tables_is_never_migrated_by_a_headless_command_which_says_what_to_run(tmp_path):
    data = tmp_path / "older"
    assert manage(data, "migrate").returncode == 0
    assert manage(data, "migrate", "pipelines", "0012").returncode == 0  # as an older version of the code left it
    out = manage(data, "run_pipeline", write(tmp_path, chain(2)), "--inline")
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert re.search(r"the database lacks \d+ migration\(s\) of this version of the code \(pipelines\.0013_run_deleted_at",
                     out.stderr), out.stderr
    assert "apply them first with `.venv/bin/python manage.py migrate`" in out.stderr
    assert manage(data, "migrate").returncode == 0
    assert manage(data, "run_pipeline", write(tmp_path, chain(2)), "--inline").returncode == 0


def test_an_owner_that_does_not_exist_is_refused_and_not_created(tmp_path):
    data = tmp_path / "new"
    path = write(tmp_path, chain(2))
    for command in (["run_pipeline", path, "--inline"], ["add_dataset", path]):
        out = manage(data, *command, "--owner", "alcie")
        assert out.returncode == 1, (command, out.stdout, out.stderr[-3000:])
        assert "--owner 'alcie': there is no user named 'alcie' (users: none yet)" in out.stderr, out.stderr[-3000:]
        assert "manage.py createsuperuser --username alcie" in out.stderr and "Traceback" not in out.stderr
    assert usernames(data) == []
    assert manage(data, "ensure_admin").returncode == 0
    out = manage(data, "run_pipeline", path, "--inline", "--owner", "alcie")
    assert out.returncode == 1 and "(users: admin)" in out.stderr and usernames(data) == ["admin"]


def test_an_owner_that_does_not_exist_is_refused_in_process_too(tmp_path, users):
    code, out, err = run_command("run_pipeline", write(tmp_path, chain(2)), "--inline", "--owner", "nobody")
    assert code == 1 and "there is no user named 'nobody' (users: collaborator, owner, stranger)" in err
    code, out, err = run_command("import_pipeline", write(tmp_path, chain(2)), "--owner", "nobody")
    assert code == 1 and "there is no user named 'nobody'" in err and not Pipeline.objects.exists()
    code, out, err = run_command("run_pipeline", write(tmp_path, chain(2)), "--inline")  # users exist, admin does not
    assert code == 1 and "no user named 'admin'" in err
    assert not Run.objects.exists() and sorted(u.username for u in users.values()) == ["collaborator", "owner", "stranger"]
    from django.contrib.auth import get_user_model

    assert get_user_model().objects.count() == 3


def test_on_a_new_machine_a_file_whose_node_id_is_dot_dot_is_refused(tmp_path):
    data = tmp_path / "new"
    doc = chain(2)
    doc["nodes"][0]["id"] = ".."
    doc["links"][0]["from"]["node"] = ".."
    out = manage(data, "run_pipeline", write(tmp_path, doc), "--inline")
    assert out.returncode == 1, out.stdout + out.stderr
    assert "node '..': nodes/0/id: '..' cannot be an id: an id is 1 to 64 letters" in out.stderr
    assert not (data / "artifacts").exists() or not any((data / "artifacts").rglob("*"))


def test_the_final_metrics_leave_out_a_metric_named_as_a_parameter(users):
    """Issue 42: Train PyTorch Model reports its learning rate at each epoch, which the schedule
    takes down to 0: run_pipeline listed "learning_rate 0" as a result beside the parameter
    (0.05). The results stay; the schedule's curve is the Metrics tab's."""
    from designer.pipelines.management.commands.run_pipeline import final_metrics
    from designer.pipelines.models import Event, NodeRun

    run = Run.objects.create(owner=users["owner"], name="digits", status="completed",
                             snapshot={"nodes": [{"id": "train", "kind": "train_pytorch_model", "parameters": {"learning_rate": 0.05}}], "links": []})
    NodeRun.objects.create(run=run, node_id="train", kind="train_pytorch_model", status="completed")
    for epoch, lr, loss in [(1, 0.05, 0.9), (2, 0.0, 0.4)]:
        Event.objects.create(run=run, node_id="train", type="metric", data={"name": "learning_rate", "value": lr, "step": epoch})
        Event.objects.create(run=run, node_id="train", type="metric", data={"name": "training_loss", "value": loss, "step": epoch})
    assert final_metrics(run, users["owner"]) == ["Train PyTorch Model: training_loss 0.4"]
