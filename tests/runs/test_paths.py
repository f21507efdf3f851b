"""Nothing leaves its folder: node ids, log names, output folders and uploaded file names never
resolve outside their run or dataset folder, whoever sends them (two users, API and CLI)."""
import json
from io import StringIO
from pathlib import Path

import pytest
from django.conf import settings
from django.core.files import File
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError

from designer.engine import graph
from designer.engine import scheduler as s
from designer.pipelines.datasets import service as datasets
from designer.pipelines.models import Dataset, NodeRun, Pipeline, Run
from designer.pipelines.runs import service as runs
from tests.pipes import chain, link, node, pipeline

pytestmark = pytest.mark.django_db
DOT_DOT = pipeline([node("..", "toy_source", value=666), node("b", "toy_add")], [link("..", "b", lid="l1")])


def artifact_files() -> dict[str, bytes]:
    root = Path(settings.ARTIFACT_ROOT)
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()} if root.is_dir() else {}


def named_problem(body) -> dict:
    [problem] = [p for p in body["problems"] if p["code"] == "bad_id"]
    assert problem["node"] == ".." and "cannot be an id" in problem["text"], body
    return problem


# ---------------------------------------------------------------- refused at the door


@pytest.mark.parametrize("bad", ["..", "."])
def test_the_api_refuses_a_node_id_of_dots_naming_the_node(owner_client, bad):
    doc = json.loads(json.dumps(DOT_DOT).replace('".."', json.dumps(bad)))
    body = owner_client.post("/api/validate", json.dumps(doc), content_type="application/json").json()
    assert body["valid"] is False and [p["node"] for p in body["problems"] if p["code"] == "bad_id"] == [bad]
    r = owner_client.post("/api/pipelines/import", json.dumps(doc), content_type="application/json")
    assert r.status_code == 400 and [p["node"] for p in r.json()["problems"] if p["code"] == "bad_id"] == [bad]
    r = owner_client.post("/api/pipelines", {"name": "x", "draft": doc}, content_type="application/json")
    assert r.status_code == 400 and "does not follow the file format" in r.json()["error"]
    assert not Pipeline.objects.exists() and not Run.objects.exists()


def test_a_saved_draft_cannot_take_a_dot_dot_id_and_cannot_run_with_one(owner_client, users):
    p = Pipeline.objects.create(owner=users["owner"], name="p", draft=chain(2))
    r = owner_client.put(f"/api/pipelines/{p.id}", json.dumps({"revision": 1, "draft": DOT_DOT}), content_type="application/json")
    assert r.status_code == 400 and named_problem(r.json())
    Pipeline.objects.filter(pk=p.pk).update(draft=DOT_DOT)  # stored by an older version
    before = artifact_files()
    r = owner_client.post(f"/api/pipelines/{p.id}/runs")
    assert r.status_code == 400 and named_problem(r.json())
    assert not Run.objects.exists() and artifact_files() == before


def test_the_cli_refuses_a_file_whose_node_id_is_dot_dot(tmp_path, users):
    path = tmp_path / "p.json"
    path.write_text(json.dumps(DOT_DOT))
    before = artifact_files()
    with pytest.raises(CommandError) as e:
        call_command("run_pipeline", str(path), "--inline", "--owner", "owner", stdout=StringIO(), stderr=StringIO())
    assert "node '..': nodes/0/id: '..' cannot be an id" in str(e.value)
    with pytest.raises(CommandError, match="node '..'"):
        call_command("import_pipeline", str(path), "--owner", "owner", stdout=StringIO())
    assert not Run.objects.exists() and not Pipeline.objects.exists() and artifact_files() == before


# ---------------------------------------------------------------- an old run that holds such an id


def old_run(owner, status=s.COMPLETED, outputs=None) -> Run:
    """A run stored before ids were checked: its snapshot and node were never validated."""
    run = Run.objects.create(owner=owner, name="old", snapshot=DOT_DOT, status="running")
    NodeRun.objects.create(run=run, node_id="..", kind="toy_source", status=status, outputs=outputs or {})
    NodeRun.objects.create(run=run, node_id="b", kind="toy_add")
    return run


@pytest.mark.production
def test_an_old_queued_dot_dot_node_fails_and_writes_nothing_outside_its_run(users):
    """The stranger's cached output and log sit where an old `..` node of the owner would have
    written: they are neither overwritten nor read."""
    theirs = Path(settings.ARTIFACT_ROOT) / "out"  # where `<run>/..` puts the output port `out`
    theirs.mkdir(parents=True, exist_ok=True)
    (theirs / "value.txt").write_text("the stranger's cached output")
    stranger_run = old_run(users["stranger"], outputs={"out": str(theirs)})
    mine = old_run(users["owner"], status=s.QUEUED)
    before = artifact_files()
    runs.execute_noderun(mine.nodes.get(node_id="..").pk)
    nr = mine.nodes.get(node_id="..")
    assert nr.status == s.FAILED, nr.error
    assert nr.error.startswith("OutsideFolder: node id '..' cannot name a folder"), nr.error
    assert mine.nodes.get(node_id="b").status == s.NOT_RUN
    assert artifact_files() == before  # nothing written anywhere, the stranger's output untouched
    assert (theirs / "value.txt").read_text() == "the stranger's cached output"
    assert stranger_run.nodes.get(node_id="..").status == s.COMPLETED


@pytest.mark.production
def test_the_api_and_pages_read_nothing_for_an_old_dot_dot_node(owner_client, users):
    root = Path(settings.ARTIFACT_ROOT)
    logs = root / "logs"  # where `<run>/..` puts the logs folder: shared by every such node
    logs.mkdir(parents=True, exist_ok=True)
    (logs / "70_driver_log.txt").write_text("the stranger's log\n")
    (root / "out").mkdir(exist_ok=True)
    (root / "out" / "value.txt").write_text("the stranger's output")
    run = old_run(users["owner"], outputs={"out": str(root / "out")})
    base = f"/runs/{run.id}/nodes/%2E%2E"  # the client would fold a literal `..`
    answers = {url: owner_client.get(url) for url in (
        f"/api{base}/log", f"/api{base}/log?file=70_driver_log.txt", f"/api{base}/files",
        f"/api{base}/files/logs/70_driver_log.txt", f"/api{base}/files/out/value.txt")}
    for url, r in answers.items():
        assert r.status_code == 400 and r["Content-Type"] == "application/json", (url, r.status_code)
        assert "node id '..' cannot name a folder" in r.json()["error"], url
        assert b"stranger" not in r.content
    page = owner_client.get(f"{base}/visualize")
    assert page.status_code == 200 and b"stranger" not in page.content
    assert "node id &#x27;..&#x27; cannot name a folder" in page.content.decode()
    assert owner_client.get(f"{base}/images/out/0").status_code == 404


def test_a_reused_output_of_an_old_dot_dot_node_is_not_read(owner_client, users):
    root = Path(settings.ARTIFACT_ROOT)
    (root / "out").mkdir(parents=True, exist_ok=True)
    (root / "out" / "value.txt").write_text("the stranger's output")
    earlier = old_run(users["owner"], outputs={"out": str(root / "out")}).nodes.get(node_id="..")
    run = Run.objects.create(owner=users["owner"], name="new", snapshot=chain(1), status="completed")
    NodeRun.objects.create(run=run, node_id="n0", kind="toy_source", status=s.REUSED, reused_from=earlier, outputs=earlier.outputs)
    r = owner_client.get(f"/api/runs/{run.id}/nodes/n0/files/out/value.txt")
    assert r.status_code == 400 and "node id '..'" in r.json()["error"]


# ---------------------------------------------------------------- names sent with a request


@pytest.mark.production
def test_a_log_name_cannot_read_another_users_log(owner_client, stranger_client, users):
    theirs = runs.submit(users["stranger"], chain(1), inline=True)
    their_log = f"../../../{theirs.id}/n0/logs/70_driver_log.txt"
    assert "wrote 1" in stranger_client.get(f"/api/runs/{theirs.id}/nodes/n0/log").json()["text"]
    run = Run.objects.create(owner=users["owner"], name="mine", snapshot=chain(1))
    NodeRun.objects.create(run=run, node_id="n0", kind="toy_source")  # pending: no log yet
    for name in (their_log, str(runs.node_dir(theirs.id, "n0") / "logs" / "70_driver_log.txt"), "..", "a\0b"):
        r = owner_client.get(f"/api/runs/{run.id}/nodes/n0/log", {"file": name})
        assert r.status_code == 400, (name, r.content)
        assert "leads outside its folder" in r.json()["error"] or "not a usable file name" in r.json()["error"], name
        assert "wrote" not in r.content.decode()
    for path in (f"..%2F..%2F..%2F{theirs.id}/n0/out/value.txt", "../../n0/logs/70_driver_log.txt"):
        assert owner_client.get(f"/api/runs/{run.id}/nodes/n0/files/logs/{path}").status_code == 404
    # and the stranger cannot reach the owner's run at all
    assert stranger_client.get(f"/api/runs/{run.id}/nodes/n0/log").status_code == 404


def test_an_output_folder_outside_the_artifact_store_is_not_listed(owner_client, users, tmp_path):
    (tmp_path / "secret.txt").write_text("not in the store")
    run = Run.objects.create(owner=users["owner"], name="r", snapshot=chain(1), status="completed")
    NodeRun.objects.create(run=run, node_id="n0", kind="toy_source", status=s.COMPLETED, outputs={"out": str(tmp_path)})
    r = owner_client.get(f"/api/runs/{run.id}/nodes/n0/files")
    assert r.status_code == 400 and "leads outside its folder" in r.json()["error"] and "secret" not in r.content.decode()
    assert owner_client.get(f"/api/runs/{run.id}/nodes/n0/files/out/secret.txt").status_code == 400


def zip_bytes() -> bytes:
    import io
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("a/1.png", b"x")
    return buf.getvalue()


@pytest.mark.parametrize("filename", ["../../escape.zip", "..\\..\\escape.zip", "/tmp/escape.zip"])
def test_an_uploaded_file_name_stays_in_its_dataset_folder(owner_client, users, filename):
    def folder(user):
        return (Path(settings.ARTIFACT_ROOT) / "datasets" / str(user.id)).resolve()

    # through the API (Django's parser already drops a folder part) ...
    r = owner_client.post("/api/datasets", {"file": SimpleUploadedFile(filename, zip_bytes())})
    assert r.status_code == 201 and r.json()["filename"] == "escape.zip", r.content
    # ... and through the one function every upload goes through (the CLI's, a script's; another
    # user here: the owner has a dataset of that name now)
    with (Path(settings.ARTIFACT_ROOT).parent / "upload.zip").open("w+b") as f:
        f.write(zip_bytes())
        ds = datasets.store(users["stranger"], "", File(f, name=filename))
    for d in Dataset.objects.all():
        stored = datasets.stored_path(d)
        assert stored.is_file() and stored.parent.parent == folder(d.owner) and stored.name == "escape.zip"
    assert ds.name == "escape.zip" and Dataset.objects.count() == 2
    assert not (Path(settings.ARTIFACT_ROOT) / "escape.zip").exists() and not Path("/tmp/escape.zip").exists()


def test_a_dataset_record_pointing_at_another_users_file_is_neither_used_nor_deleted(owner_client, stranger_client, users):
    r = stranger_client.post("/api/datasets", {"file": SimpleUploadedFile("theirs.zip", zip_bytes())})
    theirs = Dataset.objects.get(pk=r.json()["id"])
    mine = Dataset.objects.create(owner=users["owner"], name="forged", file=theirs.file.name, size=1)
    doc = pipeline([node("data", "dataset", dataset=mine.id)], [])
    with pytest.raises(graph.PipelineInvalid) as e:
        runs.submit(users["owner"], doc, inline=True)
    assert "Dataset, parameter 'dataset': the file of dataset" in str(e.value)
    assert "not in its owner's folder" in str(e.value)
    assert owner_client.delete(f"/api/datasets/{mine.id}").status_code == 204
    assert datasets.stored_path(theirs).is_file()  # the stranger's file is still there
