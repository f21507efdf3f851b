"""Problems known before submit: a Dataset or Registered model node naming what its owner does not
have (another user's dataset id, a model name they never registered) is listed with the draft's
problems at each save, named by the module's label, not only refused at Submit."""
from designer.pipelines.authoring import drafts
from designer.pipelines.models import Dataset, Pipeline
from tests.pipes import node, pipeline


def problems_of(owner, doc):
    p = Pipeline.objects.create(owner=owner, name="p", draft=doc)
    return [(x.node, x.param, str(x)) for x in drafts.problems(p.draft, p.owner_id)]


def test_another_users_dataset_and_an_unknown_model_are_problems_of_the_draft(users):
    theirs = Dataset.objects.create(owner=users["stranger"], name="theirs", file=f"datasets/{users['stranger'].id}/x.zip")
    mine = Dataset.objects.create(owner=users["owner"], name="mine", file=f"datasets/{users['owner'].id}/y.zip")
    doc = pipeline([node("d1", "dataset", dataset=theirs.id), node("d2", "dataset", dataset=mine.id),
                    node("m", "registered_model", model="never-registered")], [])
    found = problems_of(users["owner"], doc)
    about = {(n, param): text for n, param, text in found}
    assert f"you have no dataset with id {theirs.id}" in about[("d1", "dataset")]
    assert about[("d1", "dataset")].startswith("Dataset")  # the module's label, not 'd1'
    assert "you have no registered model 'never-registered'" in about[("m", "model")]
    assert ("d2", "dataset") not in about  # their own dataset is fine
    # the dataset's owner has no such problem with the same document
    assert ("d1", "dataset") not in {(n, param) for n, param, _ in problems_of(users["stranger"], doc)}


def test_a_dataset_node_with_nothing_chosen_has_one_problem_not_two(users):
    found = problems_of(users["owner"], pipeline([node("d", "dataset")], []))
    assert len([f for f in found if f[:2] == ("d", "dataset")]) == 1, found


def test_the_save_answers_with_the_problem_and_the_page_is_told_which_field(owner_client, users):
    theirs = Dataset.objects.create(owner=users["stranger"], name="theirs", file=f"datasets/{users['stranger'].id}/x.zip")
    p = Pipeline.objects.create(owner=users["owner"], name="p", draft=pipeline([], []))
    doc = pipeline([node("d", "dataset", dataset=theirs.id)], [])
    r = owner_client.put(f"/api/pipelines/{p.id}", {"revision": p.revision, "draft": doc}, content_type="application/json")
    assert r.status_code == 200, r.content
    (problem,) = [x for x in r.json()["problems"] if x.get("node") == "d"]
    assert problem["param"] == "dataset" and f"no dataset with id {theirs.id}" in problem["message"]
