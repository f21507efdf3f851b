"""The sweep pages and the sweep page's websocket: owner only; the socket says "changed" when the
sweep's group is nudged."""
import pytest
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator

from designer.asgi import application
from designer.pipelines.models import Pipeline, Sweep, Trial
from designer.pipelines.runs import events
from tests.pipes import chain
from tests.runs.test_live_events import headers_for, run_async

CONFIG = {"sampling": "grid", "parameter_space": [{"name": "lr", "expression": "choice", "values": [0.1, 0.2]}],
          "policy": {"type": "NoTerminationPolicy"}, "primary_metric_name": "score", "primary_metric_goal": "maximize",
          "max_total_runs": 2, "max_concurrent_runs": 1}


def a_sweep(owner, name="lr sweep"):
    p = Pipeline.objects.create(owner=owner, name="tuning", draft=chain(2))
    sweep = Sweep.objects.create(owner=owner, pipeline=p, name=name, snapshot=chain(2), config=CONFIG,
                                 study_name=f"test-{owner.pk}-{name}", status="running")
    Trial.objects.create(sweep=sweep, number=0, optuna_trial_id=1, values={"lr": 0.1}, status="completed", value=0.7)
    return sweep


@pytest.mark.django_db
def test_the_pages_show_only_the_owners_sweeps(owner_client, stranger_client, users):
    sweep = a_sweep(users["owner"])
    page = owner_client.get(f"/sweeps/{sweep.id}/")
    assert page.status_code == 200 and b'id="sweep-boot"' in page.content and b"lr sweep" in page.content
    listing = owner_client.get("/sweeps/").content.decode()
    assert f'href="/sweeps/{sweep.id}/"' in listing and "lr sweep" in listing and ">1 / 2<" in listing
    assert stranger_client.get(f"/sweeps/{sweep.id}/").status_code == 404
    assert "lr sweep" not in stranger_client.get("/sweeps/").content.decode()
    assert owner_client.get("/sweeps/999999/").status_code == 404


@pytest.mark.django_db(transaction=True)
def test_the_socket_says_changed_when_the_sweep_is_nudged_and_refuses_a_stranger(users):
    sweep = a_sweep(users["owner"])
    mine, stranger = headers_for(users["owner"]), headers_for(users["stranger"])

    async def scenario():
        ws = WebsocketCommunicator(application, f"/ws/sweeps/{sweep.id}/", headers=mine)
        connected, _ = await ws.connect()
        assert connected
        await get_channel_layer().group_send(events.sweep_group_name(sweep.id), {"type": "sweep.nudge"})
        assert await ws.receive_json_from(timeout=5) == {"type": "changed"}
        await ws.disconnect()

        theirs = WebsocketCommunicator(application, f"/ws/sweeps/{sweep.id}/", headers=stranger)
        connected, code = await theirs.connect()
        assert not connected and code == 4404

    run_async(scenario)
