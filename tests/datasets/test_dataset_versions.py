"""Issue 42, item 3: data assets with versions. Uploading a name again makes its next version
(the API, the Data page, the add_dataset command); a pipeline pins a version (an id, or
"name:N") or follows the latest (a name), and a run records the version it read; a version a
run or a registered model depends on is not deleted, and the refusal names them."""
import io
import json
import tarfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command

from designer.pipelines.authoring import drafts
from designer.pipelines.models import Dataset, DatasetName, DatasetUse, ModelVersion, RegisteredModel, Run
from designer.pipelines.runs import service as runs
from tests.datasets.test_datasets_api import image_zip, pets_pipeline, upload

pytestmark = pytest.mark.django_db


def test_the_same_name_again_is_its_next_version_and_both_are_listed(owner_client, users):
    first = upload(owner_client, image_zip(), "digits.zip", name="digits").json()
    again = upload(owner_client, image_zip(classes=("cats", "dogs", "birds")), "digits.zip", name="digits")
    assert again.status_code == 201, again.content
    second = again.json()
    assert (first["version"], second["version"]) == (1, 2) and first["id"] != second["id"]
    assert second["latest"] and second["created_by"] == "owner"
    assert second["contents"]["classes"] == {"birds": 3, "cats": 3, "dogs": 3} and second["contents"]["images"] == 9
    listed = owner_client.get("/api/datasets", {"name": "digits"}).json()["datasets"]
    assert [(d["version"], d["latest"]) for d in listed] == [(2, True), (1, False)]
    assert owner_client.get(f"/api/datasets/{first['id']}").json()["latest"] is False
    # a deleted version's number is never given again: "digits:2" names one archive for good
    assert owner_client.delete(f"/api/datasets/{second['id']}").status_code == 204
    assert upload(owner_client, image_zip(), "digits.zip", name="digits").json()["version"] == 3
    # without a name, the file's name is the dataset's
    assert upload(owner_client, image_zip(), "pets.zip").json()["version"] == 1
    assert upload(owner_client, image_zip(), "pets.zip", name="  ").json()["version"] == 2


def test_another_users_name_does_not_count(owner_client, client, users):
    upload(owner_client, image_zip(), "digits.zip", name="digits")
    client.force_login(users["stranger"])
    r = upload(client, image_zip(), "digits.zip", name="digits")
    assert r.status_code == 201 and r.json()["version"] == 1
    assert [d["name"] for d in client.get("/api/datasets").json()["datasets"]] == ["digits"]


def test_the_add_dataset_command_adds_the_next_version(tmp_path, users):
    archive = tmp_path / "digits.zip"
    archive.write_bytes(image_zip())
    ids = []
    for _ in range(2):
        out, err = io.StringIO(), io.StringIO()
        call_command("add_dataset", str(archive), owner="owner", name="digits", stdout=out, stderr=err)
        ids.append(int(out.getvalue()))
    assert "dataset 'digits' version 2" in err.getvalue()
    assert [Dataset.objects.get(pk=i).version for i in ids] == [1, 2]


def test_a_name_follows_the_latest_version_an_id_or_name_and_version_pins_one_and_the_run_records_it(owner_client, users):
    v1 = upload(owner_client, image_zip(), "digits.zip", name="digits").json()["id"]
    v2 = upload(owner_client, image_zip(), "digits.zip", name="digits").json()["id"]
    used = {}
    for value in ("digits", "digits:1", v1, v2):
        run = runs.submit(users["owner"], pets_pipeline(value))
        used[value] = next(n for n in run.snapshot["nodes"] if n["id"] == "data")["parameters"]["dataset"]
        assert list(DatasetUse.objects.filter(run=run).values_list("dataset_id", "node_id")) == [(used[value], "data")]
    assert used == {"digits": v2, "digits:1": v1, v1: v1, v2: v2}
    # the run's API object says which version each Dataset node read
    assert owner_client.get(f"/api/runs/{run.id}").json()["datasets"] == [{"node": "data", "id": v2, "name": "digits", "version": 2}]
    # the API's validate says what a wrong version is, and which there are
    doc = pets_pipeline("digits:3")
    answer = owner_client.post("/api/validate", doc, content_type="application/json").json()
    assert not answer["valid"]
    assert ["Dataset, parameter 'dataset': your dataset 'digits' has no version 3 (its versions: 1, 2)"] == [
        p["text"] for p in answer["problems"] if p.get("node") == "data"]
    # a draft kept with a name (the pane's "latest version") has no problem, and stays a name
    p, found = drafts.create(users["owner"], "follows", pets_pipeline("digits"))
    assert found == [] and p.draft["nodes"][0]["parameters"]["dataset"] == "digits"


def test_the_pane_offers_a_names_latest_version_and_each_version(owner_client, users):
    upload(owner_client, image_zip(), "digits.zip", name="digits")
    upload(owner_client, image_zip(), "digits.zip", name="digits")
    p, _ = drafts.create(users["owner"], "pane", pets_pipeline("digits"))
    node = json.dumps(pets_pipeline("digits")["nodes"][0])
    html = owner_client.post(f"/pipelines/{p.id}/pane", {"node": node}).content.decode()
    assert '<option value="digits" selected>digits: latest version (now v2)</option>' in html
    assert "digits v1 (" in html and "digits v2 (" in html and 'aria-invalid' not in html.split('id="param-dataset"')[1][:300]


def test_a_version_a_run_used_is_not_deleted_and_the_refusal_names_the_run(owner_client, users):
    v1 = upload(owner_client, image_zip(), "digits.zip", name="digits").json()["id"]
    run = runs.submit(users["owner"], pets_pipeline("digits"), name="first try")
    r = owner_client.delete(f"/api/datasets/{v1}")
    assert r.status_code == 409
    assert r.json() == {"error": f"Dataset 'digits' version 1 is not deleted: 1 run(s) used it (run {run.id} 'first try'): "
                                 "delete them first.", "runs": [run.id], "models": []}
    detail = owner_client.get(f"/api/datasets/{v1}").json()
    assert [(u["id"], u["node"]) for u in detail["used_by"]["runs"]] == [(run.id, "data")]
    Run.objects.filter(pk=run.pk).update(status="completed")
    assert owner_client.delete(f"/api/runs/{run.id}").status_code == 200  # hidden at once, its row kept until its files go
    assert Run.everything.filter(pk=run.pk).exists()
    assert owner_client.get(f"/api/datasets/{v1}").json()["used_by"]["runs"] == []
    assert owner_client.delete(f"/api/datasets/{v1}").status_code == 204


def test_a_version_a_registered_model_was_trained_on_is_not_deleted(owner_client, users):
    v1 = upload(owner_client, image_zip(), "digits.zip", name="digits").json()["id"]
    model = RegisteredModel.objects.create(owner=users["owner"], name="digit-reader", last_version=3)
    ModelVersion.objects.create(model=model, version=3, folder="models/x", lineage={
        "datasets": {"training": [{"id": v1, "name": "digits", "node": "data"}], "validation": []}})
    r = owner_client.delete(f"/api/datasets/{v1}")
    assert r.status_code == 409 and r.json()["models"] == ["digit-reader:3"]
    assert "1 registered model version(s) were trained on it (digit-reader:3)" in r.json()["error"]
    assert Dataset.objects.filter(pk=v1).exists()


def test_the_data_page_lists_each_dataset_once_and_its_page_shows_versions_classes_preview_and_lineage(owner_client, stranger_client,
                                                                                                        users):
    upload(owner_client, image_zip(), "digits.zip", name="digits")
    v2 = upload(owner_client, image_zip(classes=("cats", "dogs", "birds")), "digits.zip", name="digits").json()
    p, _ = drafts.create(users["owner"], "pets", pets_pipeline("digits"))
    run = runs.submit(users["owner"], p.draft, pipeline=p, name="lineage run")
    page = owner_client.get("/data/").content.decode()
    assert page.count('data-dataset="digits"') == 1 and ">Zip archive<" in page
    page = owner_client.get("/data/digits/").content.decode()
    assert "Version 2 · latest" in page and 'data-version="1"' in page and 'data-version="2"' in page
    assert '<td class="class-name">birds</td><td class="num">3</td>' in page
    assert "lineage run" in page and f'href="/pipelines/{p.id}/?run={run.id}"' in page
    thumb = owner_client.get(f"/data/versions/{v2['id']}/preview/0")
    assert thumb.status_code == 200 and thumb["Content-Type"] == "image/png" and thumb.content[:4] == b"\x89PNG"
    assert owner_client.get(f"/data/versions/{v2['id']}/preview/99").status_code == 404
    # a name with a slash has its page too (the API says where)
    odd = upload(owner_client, image_zip(), "x.zip", name="team/pets 100%").json()
    assert odd["page_url"] == "/data/team%2Fpets%20100%25/?version=1"
    assert ">team/pets 100%<" in owner_client.get(odd["page_url"]).content.decode()
    # the page's upload adds version 3; a stranger sees none of it
    r = owner_client.post("/data/", {"file": SimpleUploadedFile("digits.zip", image_zip()), "name": "digits"})
    assert r.status_code == 302 and r["Location"] == "/data/digits/?version=3"
    r = owner_client.post("/data/", {"file": SimpleUploadedFile("cats.tar.gz", tar_of(["cats/1.png"]))})
    assert r["Location"] == "/data/cats/?version=1"  # no name given: the archive's, as the palette names it
    r = owner_client.post("/data/", {"file": SimpleUploadedFile("notes.txt", b"hi")}, follow=True)
    assert "Not uploaded: notes.txt is not an archive of images" in r.content.decode()
    assert stranger_client.get("/data/digits/").status_code == 404
    assert stranger_client.get(f"/data/versions/{v2['id']}/preview/0").status_code == 404
    assert stranger_client.post(f"/data/versions/{v2['id']}/delete").status_code == 404
    # deleting a version a run used, from the page: refused, naming the run
    r = owner_client.post(f"/data/versions/{v2['id']}/delete", follow=True)
    assert f"run {run.id} &#x27;lineage run&#x27;" in r.content.decode() and Dataset.objects.filter(pk=v2["id"]).exists()


def tar_of(names) -> bytes:
    """A .tar.gz of one-byte files of these names (not images, whatever their names say)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        for name in names:
            info = tarfile.TarInfo(name)
            info.size = 1
            t.addfile(info, io.BytesIO(b"x"))
    return buf.getvalue()


def test_a_tar_archives_classes_are_counted_past_a_wrapping_folder_and_hidden_files(owner_client):
    names = ["set/cats/1.png", "set/cats/2.png", "set/dogs/1.png", "set/.DS_Store", "set/__MACOSX/cats/._1.png", "set/notes.txt"]
    ds = upload(owner_client, tar_of(names), "set.tar.gz").json()
    assert ds["contents"]["classes"] == {"cats": 2, "dogs": 1} and ds["contents"]["files"] == 6
    assert [p["label"] for p in ds["contents"]["preview"]] == ["cats", "dogs", "cats"]
    # not an image after all: the preview says so, it does not fail
    r = owner_client.get(f"/data/versions/{ds['id']}/preview/0")
    assert r.status_code == 404 and "is not a readable image" in r.content.decode()


@pytest.mark.production
@pytest.mark.django_db(transaction=True)
def test_datasets_of_one_name_stored_before_the_rule_are_renamed_by_the_migration(users):
    """An installation that has two 'digits' of one user (uploaded before names were checked)
    migrates: the later one becomes 'digits 2' ('digits 3' when 'digits 2' is taken), another
    user's 'digits' stays, and no dataset is lost."""
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    before, after = [("pipelines", "0010_api_tokens")], [("pipelines", "0011_one_dataset_name_per_owner")]
    executor = MigrationExecutor(connection)
    latest = executor.loader.graph.leaf_nodes()
    sequences = _sqlite_sequences(connection)
    try:
        executor.migrate(before)
        old = executor.loader.project_state(before).apps.get_model("pipelines", "Dataset")
        owner, stranger = users["owner"].id, users["stranger"].id
        made = [old.objects.create(owner_id=o, name=name, file=f"datasets/{o}/{i}.zip").id
                for i, (o, name) in enumerate([(owner, "digits"), (owner, "digits"), (owner, "digits 2"), (owner, "digits"), (stranger, "digits")])]
        MigrationExecutor(connection).migrate(after)
        names = dict(Dataset.objects.values_list("id", "name"))
        assert [names[i] for i in made] == ["digits", "digits 3", "digits 2", "digits 4", "digits"]
    finally:  # the later migrations again: the tests after this one (and their workers) use every column
        MigrationExecutor(connection).migrate(latest)
        _restore_sqlite_sequences(connection, sequences)
    assert "weights" in {c.name for c in connection.introspection.get_table_description(connection.cursor(), "pipelines_worker")}


def _sqlite_sequences(connection) -> list:
    """SQLite's AUTOINCREMENT counters: a migration that remakes a table (pipelines_run) starts
    its ids at 1 again, and a later test's run would then write into the folder an earlier run
    of the same id left in the shared ARTIFACT_ROOT. (PostgreSQL keeps its sequences.)"""
    if connection.vendor != "sqlite":
        return []
    with connection.cursor() as c:
        c.execute("SELECT name, seq FROM sqlite_sequence")
        return c.fetchall()


def _restore_sqlite_sequences(connection, sequences) -> None:
    with connection.cursor() as c:
        for name, seq in sequences:
            c.execute("UPDATE sqlite_sequence SET seq = MAX(seq, %s) WHERE name = %s", [seq, name])
            c.execute("INSERT INTO sqlite_sequence (name, seq) SELECT %s, %s WHERE NOT EXISTS "
                      "(SELECT 1 FROM sqlite_sequence WHERE name = %s)", [name, seq, name])


@pytest.mark.production
@pytest.mark.django_db(transaction=True)
def test_the_migration_makes_every_kept_dataset_version_1_and_records_the_runs_that_used_one(users):
    """Upgraded from before versions: each dataset is version 1 of its name, and a kept run whose
    Dataset node read one of its owner's datasets is that version's lineage (so it is kept while the
    run is); an id of another user's dataset, or of none, records nothing."""
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    before, after = [("pipelines", "0021_jobs")], [("pipelines", "0022_dataset_versions")]
    executor = MigrationExecutor(connection)
    latest = executor.loader.graph.leaf_nodes()
    sequences = _sqlite_sequences(connection)
    try:
        executor.migrate(before)
        old = executor.loader.project_state(before).apps
        OldDataset, OldRun = old.get_model("pipelines", "Dataset"), old.get_model("pipelines", "Run")
        owner, stranger = users["owner"].id, users["stranger"].id
        mine = OldDataset.objects.create(owner_id=owner, name="digits", file=f"datasets/{owner}/a/digits.zip").id
        theirs = OldDataset.objects.create(owner_id=stranger, name="digits", file=f"datasets/{stranger}/b/digits.zip").id
        doc = {"nodes": [{"id": "a", "kind": "dataset", "parameters": {"dataset": mine}},
                         {"id": "b", "kind": "dataset", "parameters": {"dataset": theirs}},
                         {"id": "c", "kind": "dataset", "parameters": {"dataset": 99999}}], "links": []}
        run = OldRun.objects.create(owner_id=owner, name="old run", snapshot=doc).id
        MigrationExecutor(connection).migrate(after)
        assert sorted(Dataset.objects.values_list("id", "version")) == [(mine, 1), (theirs, 1)]
        names = sorted(DatasetName.objects.values_list("owner_id", "name", "last_version"))
        assert names == sorted([(owner, "digits", 1), (stranger, "digits", 1)])
        assert list(DatasetUse.objects.values_list("run_id", "dataset_id", "node_id")) == [(run, mine, "a")]
    finally:
        MigrationExecutor(connection).migrate(latest)
        _restore_sqlite_sequences(connection, sequences)
