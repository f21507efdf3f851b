"""A page follows a run over the websocket: stored events first, then live ones, from a worker
process (polling the store in embedded mode, woken by Redis in production)."""
import asyncio
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.db import connections
from django.test import Client

from designer.asgi import application
from designer.pipelines import runs
from tests.pipes import chain

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.production]


def run_async(scenario):
    """Run a scenario in its own event loop, closing the database connection it opened."""

    async def wrapped():
        try:
            return await scenario()
        finally:
            await database_sync_to_async(connections.close_all)()

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


def test_a_page_receives_a_runs_events_live_from_the_worker(shared_worker, users):
    headers = headers_for(users["owner"])

    async def scenario():
        run = await database_sync_to_async(runs.submit)(users["owner"], chain(3, sleep=0.5))
        ws = WebsocketCommunicator(application, f"/ws/runs/{run.id}/", headers=headers)
        connected, _ = await ws.connect()
        assert connected
        started = time.monotonic()
        events = await collect(ws)
        await ws.disconnect()
        return events, time.monotonic() - started

    events, took = run_async(scenario)
    kinds = [(e["node"], e["type"]) for e in events if e["type"] != "log"]
    assert kinds[:2] == [("n0", "node_started"), ("n0", "node_finished")]
    assert kinds[-1] == ("", "run_finished") and events[-1]["data"] == {"status": "completed"}
    assert [e["id"] for e in events] == sorted(e["id"] for e in events)
    assert took < 6


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
