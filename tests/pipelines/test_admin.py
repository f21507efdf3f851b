import pytest
from django.contrib.auth import get_user_model

from designer.pipelines.runs import service as runs
from tests.pipes import chain

pytestmark = pytest.mark.django_db


def test_the_admin_lists_pipelines_runs_and_node_runs(client, users):
    admin = get_user_model().objects.create_superuser("root-admin", password=None)
    client.force_login(admin)
    run = runs.submit(users["owner"], chain(2), inline=True)
    for url in ("/admin/pipelines/pipeline/", "/admin/pipelines/run/", "/admin/pipelines/noderun/",
                f"/admin/pipelines/run/{run.id}/change/"):
        response = client.get(url)
        assert response.status_code == 200, url
    assert b"n1" in client.get(f"/admin/pipelines/run/{run.id}/change/").content


def test_the_admin_is_closed_to_ordinary_users(owner_client):
    assert owner_client.get("/admin/pipelines/run/").status_code == 302


@pytest.mark.django_db(transaction=True)
def test_deleting_runs_in_the_admin_keeps_what_a_later_run_reused_and_refuses_an_unfinished_run(client, users):
    """The admin deletes as the Delete run button does: a later run that reused the first run's
    outputs still reads them; a run that is not over offers no delete."""
    from django.conf import settings

    from designer.pipelines.models import Run
    from designer.pipelines.runs import retention

    admin = get_user_model().objects.create_superuser("root-admin", password=None)
    client.force_login(admin)
    first = runs.submit(users["owner"], chain(2), inline=True)
    second = runs.submit(users["owner"], chain(2), inline=True)  # every node reused from the first run
    assert set(second.nodes.values_list("status", flat=True)) == {"reused"}
    busy = Run.objects.create(owner=users["owner"], name="busy", snapshot=chain(2), status="running")

    r = client.post(f"/admin/pipelines/run/{first.id}/delete/", {"post": "yes"})
    assert r.status_code == 302
    assert not Run.objects.filter(pk=first.id).exists()  # gone from every page at once
    retention.collect(grace=retention.timedelta(0))
    reused = second.nodes.get(node_id="n1")
    assert reused.reused_from is not None and reused.reused_from.run_id == first.id
    assert (settings.ARTIFACT_ROOT / str(first.id) / "n1" / "out").is_dir()  # the second run still reads it

    assert client.get(f"/admin/pipelines/run/{busy.id}/delete/").status_code == 403
    r = client.post("/admin/pipelines/run/", {"action": "delete_selected", "_selected_action": [busy.id, second.id], "post": "yes"},
                    follow=True)
    assert r.status_code == 200
    text = r.content.decode()
    assert "Deleted 1 run. Not deleted: run #" in text and "cancel it first" in text and "Successfully deleted" not in text
    assert Run.objects.filter(pk=busy.id).exists() and not Run.objects.filter(pk=second.id).exists()
    retention.collect(grace=retention.timedelta(0))
    assert not (settings.ARTIFACT_ROOT / str(first.id)).exists()  # nothing reads it any more

