"""Drafts in one place (designer/pipelines/authoring/drafts.py): saves guarded by their revision, also when
two come at once; a rename that never loses a step of the revision; import, clone, delete, as the
API and the pages both use them."""
import json
import re
import threading

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connections

from designer.engine import statuses
from designer.pipelines.authoring import drafts
from designer.pipelines.models import NodeRun, Pipeline, Run
from tests.pipes import chain, node, pipeline

ROUNDS = 5  # races repeated: each round is a new chance for the two to overlap in the database


def at_once(*calls):
    """Run each call in its own thread (its own database connection), released together; returns
    what each returned or raised."""
    start, results = threading.Barrier(len(calls)), [None] * len(calls)

    def run(i, call):
        try:
            start.wait()
            results[i] = call()
        except Exception as e:
            results[i] = e
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(i, c)) for i, c in enumerate(calls)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return results


def save_of(pk, revision, draft=None, name=None):
    """A save as a request makes it: its own read of the pipeline, then the guarded save."""
    return lambda: drafts.save(Pipeline.objects.get(pk=pk), revision, draft=draft, name=name)


def rename_of(pk, name):
    return lambda: drafts.rename(Pipeline.objects.get(pk=pk), name)


def a_run(p: Pipeline) -> Run:
    run = Run.objects.create(owner=p.owner, pipeline=p, name=p.name, snapshot=p.draft, status=statuses.COMPLETED)
    NodeRun.objects.create(run=run, node_id="n0", kind="toy_source", status=statuses.COMPLETED)
    return run


# ---------------------------------------------------------------- the revision guard


@pytest.mark.production
@pytest.mark.django_db(transaction=True)
def test_two_saves_of_the_same_revision_at_once_one_wins_the_other_is_told_and_nothing_is_lost(users):
    for _ in range(ROUNDS):
        p = Pipeline.objects.create(owner=users["owner"], name="p", draft=chain(2))
        results = at_once(save_of(p.pk, 1, draft=chain(3)), save_of(p.pk, 1, draft=chain(5)))
        conflicts = [r for r in results if isinstance(r, drafts.Conflict)]
        won = [i for i, r in enumerate(results) if not isinstance(r, Exception)]
        assert len(won) == 1 and len(conflicts) == 1, results
        assert conflicts[0].stored_revision == 2 and "revision 2" in str(conflicts[0]) and "reload" in str(conflicts[0])
        p.refresh_from_db()
        assert p.revision == 2 and len(p.draft["nodes"]) == (3, 5)[won[0]]  # the winner's draft, whole


@pytest.mark.production
@pytest.mark.django_db(transaction=True)
def test_a_rename_racing_a_save_is_never_lost_and_moves_the_revision_once(users):
    for _ in range(ROUNDS):
        p = Pipeline.objects.create(owner=users["owner"], name="p", draft=chain(2))
        renamed, saved = at_once(rename_of(p.pk, "renamed"), save_of(p.pk, 1, draft=chain(4)))
        assert renamed is None, renamed
        p.refresh_from_db()
        assert p.name == "renamed"
        if isinstance(saved, drafts.Conflict):  # the rename came first: the tab saved a stale revision
            assert saved.stored_revision == 2 and p.revision == 2 and len(p.draft["nodes"]) == 2
        else:  # the save came first: the rename moved its revision on
            assert saved == [] and p.revision == 3 and len(p.draft["nodes"]) == 4


def test_a_rename_from_a_stale_read_still_moves_the_revision_on(users):
    """The page reads the pipeline, a designer tab saves, then the page renames: the revision
    is 3, so that the tab (at 2) is refused on its next save instead of overwriting silently."""
    page_read = Pipeline.objects.create(owner=users["owner"], name="p", draft=chain(2))
    drafts.save(Pipeline.objects.get(pk=page_read.pk), 1, draft=chain(3))
    drafts.rename(page_read, "renamed")
    assert page_read.revision == 3
    with pytest.raises(drafts.Conflict) as e:
        drafts.save(Pipeline.objects.get(pk=page_read.pk), 2, draft=chain(5))
    assert e.value.stored_revision == 3
    stored = Pipeline.objects.get(pk=page_read.pk)
    assert (stored.name, stored.revision, len(stored.draft["nodes"])) == ("renamed", 3, 3)


def test_a_rename_from_the_page_and_one_from_the_api_each_move_the_revision_once(owner_client, users):
    p = Pipeline.objects.create(owner=users["owner"], name="p", draft=chain(2))
    r = owner_client.post(f"/pipelines/{p.id}/rename", {"name": " from the page "}, HTTP_HX_REQUEST="true")
    assert r.status_code == 200 and "from the page" in r.content.decode()
    assert Pipeline.objects.values_list("name", "revision").get(pk=p.pk) == ("from the page", 2)
    r = owner_client.put(f"/api/pipelines/{p.id}", json.dumps({"revision": 2, "name": "from the API"}),
                         content_type="application/json")
    assert r.status_code == 200 and r.json()["revision"] == 3
    assert Pipeline.objects.values_list("name", "revision").get(pk=p.pk) == ("from the API", 3)
    stale = owner_client.put(f"/api/pipelines/{p.id}", json.dumps({"revision": 2, "name": "late"}),
                             content_type="application/json")
    assert stale.status_code == 409 and stale.json()["stored_revision"] == 3
    assert Pipeline.objects.get(pk=p.pk).draft == chain(2)


def test_a_name_too_long_or_empty_is_refused_and_changes_nothing(users):
    p = Pipeline.objects.create(owner=users["owner"], name="p", draft=chain(2))
    for name, reason in (("   ", "cannot be empty"), ("x" * 201, "at most 200 characters (this one has 201)")):
        with pytest.raises(drafts.DraftError, match=re.escape(reason)):
            drafts.rename(p, name)
    assert Pipeline.objects.values_list("name", "revision").get(pk=p.pk) == ("p", 1)


# ---------------------------------------------------------------- import, clone, create, delete


def test_a_document_is_imported_with_its_problems_and_one_that_cannot_be_read_is_not(users):
    with pytest.raises(drafts.Unreadable) as e:
        drafts.read_document(b"{nope", what="bad.json")
    assert str(e.value) == "bad.json cannot be imported" and e.value.problems[0].code == "malformed_json"
    with pytest.raises(drafts.Unreadable) as e:
        drafts.read_document(json.dumps({"schema_version": 9, "nodes": [], "links": []}))
    assert "newer Pipeline Designer" in str(e.value.problems[0])

    assert not Pipeline.objects.exists()
    # a draft to fix in the designer: imported, and its problems said
    doc = drafts.read_document(json.dumps(pipeline([node("a", "toy_source", value=5000), node("b", "toy_add", colour=1)], [])))
    p, found = drafts.import_document(users["owner"], doc)
    assert sorted((x.code, x.node) for x in found) == [("bad_value", "a"), ("missing_input", "b"), ("unknown_param", "b")]
    assert p.draft["nodes"][0]["parameters"] == {"value": 5000}


def test_the_page_imports_a_draft_with_problems_refuses_an_unreadable_file_and_names_a_good_one_by_its_document(owner_client, users):
    r = owner_client.post("/pipelines/import", {"file": SimpleUploadedFile("x.json", b"[1,")})
    assert r.status_code == 400 and "x.json cannot be imported" in r.content.decode() and "not valid JSON" in r.content.decode()
    assert not Pipeline.objects.exists()
    bad = pipeline([node("a", "toy_source", value=5000)], [], name="bad")
    r = owner_client.post("/pipelines/import", {"file": SimpleUploadedFile("bad.json", json.dumps(bad).encode())}, follow=True)
    assert r.context["boot"]["messages"] == [{"text": "Imported bad, with 1 problem(s) to fix before it runs: they are "
                                                      "listed below the canvas.", "level": "warning"}]
    assert "out of range" in r.context["boot"]["problems"][0]["message"]
    Pipeline.objects.all().delete()
    unnamed = chain(2)
    del unnamed["name"]
    r = owner_client.post("/pipelines/import", {"file": SimpleUploadedFile("three.json", json.dumps(chain(3, name="three")).encode())})
    r2 = owner_client.post("/pipelines/import", {"file": SimpleUploadedFile("digits v1.json", json.dumps(unnamed).encode())})
    assert r.status_code == r2.status_code == 302
    assert sorted(Pipeline.objects.values_list("name", flat=True)) == ["digits v1", "three"]


def test_a_clone_copies_the_draft_and_none_of_the_runs(owner_client, users):
    p = Pipeline.objects.create(owner=users["owner"], name="p", draft=chain(2))
    a_run(p)
    from_api = owner_client.post(f"/api/pipelines/{p.id}/clone").json()
    assert owner_client.post(f"/pipelines/{p.id}/clone").status_code == 302
    copies = Pipeline.objects.exclude(pk=p.pk)
    assert sorted(c.id for c in copies) == sorted([from_api["id"], copies.exclude(pk=from_api["id"]).get().id])
    for c in copies:
        assert (c.name, c.draft, c.revision, c.owner_id) == ("p (copy)", p.draft, 1, users["owner"].id)
        assert not c.runs.exists()
    assert p.runs.count() == 1 and Run.objects.count() == 1 and NodeRun.objects.count() == 1


def test_create_save_and_delete_check_the_draft_and_keep_the_runs(users):
    p, problems = drafts.create(users["owner"])
    assert (p.name, p.draft["nodes"], problems) == ("Untitled pipeline", [], [])
    assert drafts.create(users["owner"], draft=chain(2, name="named"))[0].name == "named"
    with pytest.raises(drafts.Unreadable, match="does not follow the file format"):
        drafts.save(p, 1, draft={"schema_version": 1, "nodes": "x", "links": []})
    with pytest.raises(drafts.DraftError, match="must be a whole number"):
        drafts.save(p, "1", name="x")
    broken = chain(2)
    broken["nodes"][1]["parameters"]["amount"] = 1000
    assert [(x.node, x.param) for x in drafts.save(p, 1, draft=broken)] == [("n1", "amount")]
    assert Pipeline.objects.get(pk=p.pk).revision == 2
    run = a_run(p)
    drafts.delete(p)
    assert not Pipeline.objects.filter(pk=p.pk).exists() and Run.objects.get(pk=run.pk).pipeline is None
