"""Issue 42, item 2: a fresh `make run` offers the digits sample dataset (scikit-learn's digits made
into class folders of PNGs here, no download), so that the tour's pipeline, examples/digits.json,
which names its dataset "digits", imports and submits with no problem. Run twice, the command adds
nothing more; a user without the sample is told which dataset the file asked for."""
import io
import zipfile
from collections import Counter

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from designer.pipelines.authoring import drafts
from designer.pipelines.datasets import service as datasets
from designer.pipelines.models import Dataset, Pipeline
from tests.conftest import ROOT
from tests.pipelines.test_commands import manage

EXAMPLE = ROOT / "examples" / "digits.json"
pytestmark = pytest.mark.django_db


def make_run_setup() -> tuple:
    """What `make run` runs before it starts the servers, in this test's database: the first user,
    then the samples, twice (a second `make run`); the command's two outputs."""
    call_command("ensure_admin", stdout=io.StringIO())
    outputs = []
    for _ in range(2):
        out = io.StringIO()
        call_command("add_sample_datasets", stdout=out, stderr=io.StringIO())
        outputs.append(out.getvalue())
    return get_user_model().objects.get(username="admin"), outputs


def test_make_runs_setup_adds_the_digits_once_and_the_tours_pipeline_imports_from_the_page_with_no_problem(client):
    admin, (first, second) = make_run_setup()
    digits = Dataset.objects.get()
    assert (digits.owner, digits.name) == (admin, "digits")
    assert first.startswith(f"Added the sample dataset 'digits' (dataset {digits.id}) to admin: 1,797 images of 10 classes")
    assert second.strip() == f"admin has the sample dataset 'digits' already (dataset {digits.id})."
    with datasets.open_file(digits) as f, zipfile.ZipFile(f) as z:
        classes = Counter(name.split("/")[0] for name in z.namelist() if name.endswith(".png"))
    assert sorted(classes) == [str(d) for d in range(10)] and sum(classes.values()) == 1797

    client.force_login(admin)
    with EXAMPLE.open("rb") as f:
        page = client.post("/pipelines/import", {"file": f}, follow=True)
    p = Pipeline.objects.get()
    assert page.redirect_chain[-1][0] == f"/pipelines/{p.id}/"
    assert [str(m) for m in page.context["messages"]] == [f"Imported {p.name}."]  # not "with 1 problem(s) to fix"
    dataset_node = next(n for n in p.draft["nodes"] if n["kind"] == "dataset")
    assert dataset_node["parameters"]["dataset"] == digits.id  # as if picked in the page
    assert drafts.problems(p.draft, admin) == []  # what the problems bar lists, and Submit's dataset check


def test_on_a_new_machine_the_commands_make_run_runs_twice_add_the_sample_once_and_the_example_imports_clean(tmp_path):
    data = tmp_path / "new"
    for command in ("migrate", "ensure_admin"):
        assert manage(data, command).returncode == 0
    first, second = manage(data, "add_sample_datasets"), manage(data, "add_sample_datasets")
    assert first.returncode == second.returncode == 0, first.stderr[-3000:] + second.stderr[-3000:]
    assert "Added the sample dataset 'digits' (dataset 1)" in first.stdout
    assert "admin has the sample dataset 'digits' already (dataset 1)" in second.stdout
    imported = manage(data, "import_pipeline", EXAMPLE)
    assert imported.returncode == 0 and imported.stdout.strip() == "1", imported.stderr[-3000:]
    assert "problem" not in imported.stderr  # the command lists a file's problems there


def test_a_user_without_the_sample_is_told_the_name_the_file_asked_for(owner_client, users):
    with EXAMPLE.open("rb") as f:
        page = owner_client.post("/pipelines/import", {"file": f}, follow=True)
    p = Pipeline.objects.get()
    assert [str(m) for m in page.context["messages"]] == [
        f"Imported {p.name}, with 1 problem(s) to fix before it runs: they are listed below the canvas."]
    err = io.StringIO()
    call_command("import_pipeline", str(EXAMPLE), owner="owner", stdout=io.StringIO(), stderr=err)
    assert ("Dataset, parameter 'dataset': you have no dataset named 'digits' (`make run` adds the sample dataset "
            "'digits' to admin, `manage.py add_sample_datasets --owner owner` to you)") in err.getvalue()
    with pytest.raises(CommandError, match="(?s)digits.json cannot run, 1 problem.*you have no dataset named 'digits'"):
        call_command("run_pipeline", str(EXAMPLE), "--inline", owner="owner", stdout=io.StringIO())

    call_command("add_sample_datasets", owner="owner", stdout=io.StringIO())
    _, found = drafts.import_document(users["owner"], drafts.read_document(EXAMPLE.read_bytes(), what="digits.json"))
    assert found == [] and Dataset.objects.get().owner == users["owner"]


def test_another_users_dataset_of_that_name_is_never_picked(users):
    call_command("add_sample_datasets", owner="stranger", stdout=io.StringIO())
    p, found = drafts.import_document(users["owner"], drafts.read_document(EXAMPLE.read_bytes(), what="digits.json"))
    assert [p.code for p in found] == ["unknown_dataset"]
    assert next(n for n in p.draft["nodes"] if n["kind"] == "dataset")["parameters"]["dataset"] is None


def test_without_a_user_named_admin_make_run_goes_on_and_a_named_owner_must_exist(users):
    err = io.StringIO()
    call_command("add_sample_datasets", stdout=io.StringIO(), stderr=err)  # as `make run` calls it
    assert "No user named admin: no sample dataset added (add it to a user with " \
           "`manage.py add_sample_datasets --owner NAME`)." in err.getvalue()
    with pytest.raises(CommandError, match="--owner 'nobody': there is no user named 'nobody'"):
        call_command("add_sample_datasets", owner="nobody", stdout=io.StringIO(), stderr=io.StringIO())
    assert not Dataset.objects.exists()


def test_the_api_and_submit_read_a_dataset_given_by_name_as_the_users_dataset_of_that_name(client):
    """examples/digits.json sent as it is: /api/validate names the dataset the user lacks (not "a
    whole number"), then, once they have one of that name, finds nothing; a run records its id."""
    import json

    from designer.pipelines.runs import service as runs

    call_command("ensure_admin", stdout=io.StringIO())
    admin = get_user_model().objects.get(username="admin")
    client.force_login(admin)
    doc = json.loads(EXAMPLE.read_text())
    answer = client.post("/api/validate", doc, content_type="application/json").json()
    texts = [p["text"] for p in answer["problems"]]
    assert not answer["valid"] and any("you have no dataset named 'digits'" in t for t in texts), texts
    assert not any("whole number" in t or "no dataset chosen" in t for t in texts), texts

    call_command("add_sample_datasets", stdout=io.StringIO(), stderr=io.StringIO())
    answer = client.post("/api/validate", doc, content_type="application/json").json()
    assert answer == {"valid": True, "problems": []}, answer
    run = runs.submit(admin, doc)
    dataset = next(n for n in run.snapshot["nodes"] if n["id"] == "dataset")
    assert dataset["parameters"]["dataset"] == Dataset.objects.get(name="digits").id
    assert json.loads(EXAMPLE.read_text()) == doc  # (the caller's document is left as it was)
