"""Issue 15, defect 7: the same archive uploaded again does not silently add a second dataset of
the same name. A user picks a dataset by its name (palette, the Dataset module's picker), so the
API refuses a name the user already has (409, naming that dataset) and adds nothing; another name
is taken, and another user may use the same name."""
import io
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from designer.pipelines.models import Dataset
from tests.datasets.test_datasets_api import image_zip, upload

pytestmark = pytest.mark.django_db


def test_the_same_archive_again_is_refused_and_nothing_is_added(owner_client, users):
    first = upload(owner_client, image_zip(), "digits.zip", name="digits")
    assert first.status_code == 201, first.content
    ds = first.json()["id"]
    again = upload(owner_client, image_zip(), "digits.zip", name="digits")
    assert again.status_code == 409
    assert again.json() == {"error": f"You already have a dataset named 'digits' (dataset {ds}). Rename the archive, "
                                     "or give another name.", "dataset": ds}
    assert list(Dataset.objects.values_list("id", flat=True)) == [ds]


def test_without_a_name_the_file_name_is_the_one_compared(owner_client):
    assert upload(owner_client, image_zip(), "pets.zip").json()["name"] == "pets.zip"
    r = upload(owner_client, image_zip(), "pets.zip", name="  ")
    assert r.status_code == 409 and "named 'pets.zip'" in r.json()["error"]
    assert Dataset.objects.count() == 1


def test_another_name_is_taken_for_the_same_archive(owner_client, users):
    assert upload(owner_client, image_zip(), "digits.zip", name="digits").status_code == 201
    r = upload(owner_client, image_zip(), "digits.zip", name="digits 2")
    assert r.status_code == 201 and r.json()["name"] == "digits 2"
    assert sorted(users["owner"].datasets.values_list("name", flat=True)) == ["digits", "digits 2"]


def test_another_user_may_use_the_same_name(owner_client, client, users):
    assert upload(owner_client, image_zip(), "digits.zip", name="digits").status_code == 201
    client.force_login(users["stranger"])
    r = upload(client, image_zip(), "digits.zip", name="digits")
    assert r.status_code == 201, r.content
    assert Dataset.objects.filter(name="digits").count() == 2
    # and each one sees only their own
    assert [d["name"] for d in client.get("/api/datasets").json()["datasets"]] == ["digits"]


def test_the_add_dataset_command_refuses_a_name_the_owner_has(tmp_path, users):
    archive = tmp_path / "digits.zip"
    archive.write_bytes(image_zip())
    out = io.StringIO()
    call_command("add_dataset", str(archive), owner="owner", name="digits", stdout=out)
    ds = int(out.getvalue())
    with pytest.raises(CommandError, match=rf"named 'digits' \(dataset {ds}\).*give another name with --name"):
        call_command("add_dataset", str(archive), owner="owner", name="digits", stdout=io.StringIO())
    call_command("add_dataset", str(archive), owner="stranger", name="digits", stdout=io.StringIO())
    call_command("add_dataset", str(archive), owner="owner", name="digits 2", stdout=io.StringIO())
    assert Dataset.objects.filter(owner=users["owner"]).count() == 2


@pytest.mark.production
def test_an_upload_that_loses_the_race_for_a_name_is_refused_and_leaves_no_file(owner_client, users, monkeypatch, settings):
    """Two uploads of one name at the same moment both pass the name check; the database keeps one
    (a unique constraint), the other is answered 409 like any upload of a taken name, and its file
    is not left behind in the owner's dataset folder."""
    from designer.pipelines.datasets import service as datasets

    first = upload(owner_client, image_zip(), "digits.zip", name="digits").json()["id"]
    folder = Path(settings.ARTIFACT_ROOT) / "datasets" / str(users["owner"].id)
    files_before = sorted(p for p in folder.rglob("*") if p.is_file())
    assert Path(Dataset.objects.get().file.path) in files_before
    real, calls = datasets.same_name, []

    def checked_before_the_other_committed(owner, name):
        calls.append(name)
        return None if len(calls) == 1 else real(owner, name)

    monkeypatch.setattr(datasets, "same_name", checked_before_the_other_committed)
    r = upload(owner_client, image_zip(), "digits.zip", name="digits")
    assert r.status_code == 409, r.content
    assert r.json() == {"error": f"You already have a dataset named 'digits' (dataset {first}). Rename the archive, "
                                 "or give another name.", "dataset": first}
    assert list(Dataset.objects.values_list("id", flat=True)) == [first]
    assert sorted(p for p in folder.rglob("*") if p.is_file()) == files_before


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
