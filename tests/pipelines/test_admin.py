import pytest
from django.contrib.auth import get_user_model

from designer.pipelines import runs
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
