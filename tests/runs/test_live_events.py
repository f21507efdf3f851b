"""A page follows a run over the websocket: stored events first, then live ones, from a worker
process (polling the store in embedded mode, woken by Redis in production)."""
import asyncio
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

import pytest
from channels.db import database_sync_to_async
from channels.layers import channel_layers
from channels.testing import WebsocketCommunicator
from django.db import connections
from django.test import Client

from designer.asgi import application
from designer.pipelines.runs import service as runs
from tests.pipes import chain

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.production]


def run_async(scenario):
    """Run a scenario in its own event loop, closing the database connection it opened. The
    channel layer is made anew for it: the Redis layer's locks belong to the event loop they were
    first waited on in (a server has one loop; each scenario here its own), and a lock of an
    earlier scenario's loop fails this one's ("bound to a different event loop", seen once in 74)."""

    async def wrapped():
        channel_layers.backends.clear()
        try:
            return await scenario()
        finally:
            await database_sync_to_async(connections.close_all)()
            channel_layers.backends.clear()

    # in a thread of its own: a browser test's Playwright may keep an event loop on this one
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, wrapped()).result()


def headers_for(user):
    c = Client()
    c.force_login(user)
    return [(b"cookie", f"sessionid={c.cookies['sessionid'].value}".encode()), (b"origin", b"http://localhost"),
            (b"host", b"localhost")]


async def collect(communicator, until_type="run_finished", timeout=20):
    seen = []
    while not seen or seen[-1]["type"] != until_type:
        seen.append(await communicator.receive_json_from(timeout=timeout))
    return seen


def test_a_page_receives_a_runs_events_live_from_the_worker(shared_worker, users, settings):
    """Each event reaches the page soon after the worker stored it, while the run goes on.

    With the Redis channel layer (production) the page's poll is made a minute long: only the
    workers' nudges can bring the events in time. Embedded, the half-second poll brings them."""
    nudged = bool(settings.CHANNEL_LAYER_URL)
    settings.EVENT_POLL_SECONDS = 60.0 if nudged else 0.5
    headers = headers_for(users["owner"])

    async def scenario():
        run = await database_sync_to_async(runs.submit)(users["owner"], chain(3, sleep=4))
        ws = WebsocketCommunicator(application, f"/ws/runs/{run.id}/", headers=headers)
        connected, _ = await ws.connect()
        assert connected
        arrivals = []
        while not arrivals or arrivals[-1][0]["type"] != "run_finished":
            event = await ws.receive_json_from(timeout=20)
            arrivals.append((event, datetime.now(UTC)))
        await ws.disconnect()
        return arrivals

    arrivals = run_async(scenario)
    events = [e for e, _ in arrivals]
    kinds = [(e["node"], e["type"]) for e in events]
    assert kinds[:3] == [("n0", "node_queued"), ("n0", "node_started"), ("n0", "node_finished")]
    assert ("n1", "node_queued") in kinds and ("n2", "node_queued") in kinds  # the page paints each without asking
    assert kinds[-1] == ("", "run_finished") and events[-1]["data"] == {"status": "completed"}
    assert [e["id"] for e in events] == sorted(e["id"] for e in events)
    late = [(e["node"], e["type"], round((at - datetime.fromisoformat(e["at"])).total_seconds(), 2)) for e, at in arrivals]
    assert max(seconds for *_, seconds in late) < 7.0, late  # (a busy machine: seconds, not the end of the run)
    # live: n0's end was on the page while n1 and n2 (4 s each) had yet to run
    run_finished_at = datetime.fromisoformat(events[-1]["at"])
    n0_arrived = next(at for e, at in arrivals if (e["node"], e["type"]) == ("n0", "node_finished"))
    assert (run_finished_at - n0_arrived).total_seconds() > 0.5, late


def test_a_reconnecting_page_gets_only_what_it_missed(users):
    run = runs.submit(users["owner"], chain(2), inline=True)
    all_ids = list(run.events.values_list("id", flat=True))
    headers = headers_for(users["owner"])

    async def scenario():
        ws = WebsocketCommunicator(application, f"/ws/runs/{run.id}/?after={all_ids[2]}", headers=headers)
        await ws.connect()
        events = await collect(ws)
        await ws.disconnect()
        return events

    assert [e["id"] for e in run_async(scenario)] == all_ids[3:]


def test_a_stranger_cannot_follow_someone_elses_run(users):
    run = runs.submit(users["owner"], chain(2), inline=True)
    headers = headers_for(users["stranger"])

    async def scenario():
        ws = WebsocketCommunicator(application, f"/ws/runs/{run.id}/", headers=headers)
        connected, code = await ws.connect()
        return connected, code

    assert run_async(scenario) == (False, 4404)
