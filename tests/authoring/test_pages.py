"""The pages, server side: who may see what, and bad input."""
import json

import pytest

from designer.pipelines.models import NodeRun, Pipeline, Run
from tests.pipes import chain

pytestmark = pytest.mark.django_db


@pytest.fixture
def mine(users):
    return Pipeline.objects.create(owner=users["owner"], name="mine", draft=chain(2))


def test_pages_need_a_signed_in_user(client, mine):
    for url in ("/", f"/pipelines/{mine.id}/", f"/pipelines/{mine.id}/delete"):
        r = client.get(url)
        assert r.status_code == 302 and r["Location"].startswith("/accounts/login/"), url


def test_a_stranger_gets_404_for_every_page_of_someone_elses_pipeline(stranger_client, mine, users):
    run = Run.objects.create(owner=users["owner"], pipeline=mine, name="r", snapshot=mine.draft)
    NodeRun.objects.create(run=run, node_id="n0", kind="toy_source", outputs={"out": "/tmp"})
    for url in (f"/pipelines/{mine.id}/", f"/pipelines/{mine.id}/rename", f"/pipelines/{mine.id}/delete",
                f"/runs/{run.id}/nodes/n0/visualize", f"/runs/{run.id}/nodes/n0/images/out/0"):
        assert stranger_client.get(url).status_code == 404, url
    for url in (f"/pipelines/{mine.id}/clone", f"/pipelines/{mine.id}/delete", f"/pipelines/{mine.id}/rename"):
        assert stranger_client.post(url, {"name": "x"}).status_code == 404, url
    assert "mine" not in stranger_client.get("/").content.decode()
    assert Pipeline.objects.get(pk=mine.pk).name == "mine"


def test_the_designer_page_carries_the_draft_catalogue_and_problems(owner_client, mine):
    page = owner_client.get(f"/pipelines/{mine.id}/").content.decode()
    assert 'id="designer-boot"' in page and "Toy add" in page
    boot = json.loads(page.split('id="designer-boot" type="application/json">', 1)[1].split("</script>", 1)[0])
    assert boot["draft"] == mine.draft and boot["revision"] == 1 and boot["problems"] == []
    assert "toy_add" in {m["kind"] for m in boot["modules"]}


def test_renaming_refuses_an_empty_name_and_keeps_the_old_one(owner_client, mine):
    r = owner_client.post(f"/pipelines/{mine.id}/rename", {"name": "  "})
    assert r.status_code == 400 and "cannot be empty" in r.content.decode()
    assert Pipeline.objects.get(pk=mine.pk).name == "mine"
    r = owner_client.post(f"/pipelines/{mine.id}/rename", {"name": "new"}, HTTP_HX_REQUEST="true")
    assert r.status_code == 200 and "new" in r.content.decode()
    assert Pipeline.objects.get(pk=mine.pk).revision == 2  # an open designer tab now saves a stale revision: refused


def test_the_pane_is_generated_from_the_declaration_and_marks_bad_values(owner_client, mine):
    node = {"id": "n1", "kind": "toy_add", "parameters": {"amount": 500}}
    html = owner_client.post(f"/pipelines/{mine.id}/pane", {"node": json.dumps(node)}).content.decode()
    assert 'id="param-amount"' in html and 'min="-100"' in html and 'max="100"' in html
    assert "500 is out of range" in html and "raise an error instead" in html
    # a module that is not distributed: Run settings hold its compute target, no node or process count
    assert 'data-run-setting="compute_target"' in html and 'data-run-setting="node_count"' not in html
    assert "Regenerate output" in html
    unknown = owner_client.post(f"/pipelines/{mine.id}/pane", {"node": json.dumps({"id": "x", "kind": "gone"})})
    assert "Unknown module kind gone" in unknown.content.decode()
    assert owner_client.post(f"/pipelines/{mine.id}/pane", {"node": "{"}).status_code == 400


def test_an_import_without_a_file_or_too_big_says_why(owner_client, settings):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from designer.pipelines.runs import views

    r = owner_client.post("/pipelines/import", {})
    assert r.status_code == 400 and "choose a pipeline file" in r.content.decode()
    big = SimpleUploadedFile("big.json", b" " * (views.MAX_IMPORT_BYTES + 1))
    r = owner_client.post("/pipelines/import", {"file": big})
    assert r.status_code == 400 and "at most" in r.content.decode()
    assert not Pipeline.objects.exists()


def test_visualize_names_the_module_as_the_canvas_does_and_help_has_no_empty_default(owner_client, users, mine):
    from designer.pipelines.runs import service as runs
    from tests.pipes import chain

    run = runs.submit(users["owner"], chain(1), inline=True)
    html = owner_client.get(f"/runs/{run.id}/nodes/n0/visualize").content.decode()
    assert f'<h3 title="module n0 of the pipeline">Toy source in run #{run.id}: completed</h3>' in html
    # each output by its port's label and its type in words: no port id, no type name
    assert '<h4>Out <small class="muted">images with a labels index</small></h4>' in html and "ImageDirectory</" not in html
    pane = owner_client.post(f"/pipelines/{mine.id}/pane", {"node": json.dumps({"id": "a", "kind": "toy_add"})}).content.decode()
    assert "· default" in pane and "· default <" not in pane and "· default </p>" not in pane
    hold_help = pane.split('id="help-hold_file">', 1)[1].split("</p>", 1)[0]
    assert hold_help == "runs on only once this file is gone", hold_help  # its default is "": nothing to say


def test_a_run_of_no_saved_pipeline_is_opened_by_saving_it_as_one(owner_client, stranger_client, users, mine):
    """A run whose pipeline was deleted (or run headless before such runs were saved with one):
    the Pipelines page offers to open it; opening saves its pipeline and shows the run there."""
    from designer.pipelines.runs import service as runs

    run = runs.submit(users["owner"], chain(2, name="gone"), inline=True)
    assert run.pipeline_id is None
    home = owner_client.get("/").content.decode()
    assert f'form="open-run-{run.id}"' in home and f'action="/runs/{run.id}/open"' in home
    assert stranger_client.post(f"/runs/{run.id}/open").status_code == 404
    r = owner_client.post(f"/runs/{run.id}/open")
    run.refresh_from_db()
    p = run.pipeline
    assert r.status_code == 302 and r["Location"] == f"/pipelines/{p.id}/?run={run.id}"
    assert p.name == "gone" and [n["id"] for n in p.draft["nodes"]] == ["n0", "n1"]
    assert "it is saved as gone, where it opens" in owner_client.get(r["Location"]).content.decode()
    assert owner_client.post(f"/runs/{run.id}/open")["Location"] == r["Location"]  # once only
    assert Pipeline.objects.filter(name="gone").count() == 1
    assert f'href="/pipelines/{p.id}/?run={run.id}"' in owner_client.get("/").content.decode()
