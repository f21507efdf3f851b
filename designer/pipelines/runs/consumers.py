"""Relay a run's events to a browser. Storage is the truth: the consumer sends what the store
holds after the last id the page saw, when nudged by the channel layer or every few seconds.
A sweep's page is only told that its sweep changed: it reads the sweep again from the API."""
import asyncio
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.conf import settings

from designer.engine import jsontext
from designer.pipelines.models import Run, Sweep
from designer.pipelines.runs import events


class RunConsumer(AsyncJsonWebsocketConsumer):
    async def connect(self):
        user = self.scope["user"]
        self.run_id = int(self.scope["url_route"]["kwargs"]["pk"])
        if not user.is_authenticated or not await database_sync_to_async(Run.objects.filter(pk=self.run_id, owner=user).exists)():
            await self.close(code=4404)
            return
        after = parse_qs(self.scope["query_string"].decode()).get("after", ["0"])[0]
        self.last_id = jsontext.whole_number(after) or 0
        self.wake = asyncio.Event()
        await self.channel_layer.group_add(events.group_name(self.run_id), self.channel_name)
        await self.accept()
        self.pump = asyncio.create_task(self._pump())

    async def disconnect(self, code):
        if hasattr(self, "pump"):
            self.pump.cancel()
            await self.channel_layer.group_discard(events.group_name(self.run_id), self.channel_name)

    async def run_nudge(self, message):
        self.wake.set()

    async def _pump(self):
        while True:
            batch = await database_sync_to_async(events.since)(self.run_id, self.last_id)
            for event in batch:
                await self.send_json(event)
                self.last_id = event["id"]
            try:
                await asyncio.wait_for(self.wake.wait(), settings.EVENT_POLL_SECONDS)
            except TimeoutError:
                pass
            self.wake.clear()


class SweepConsumer(AsyncJsonWebsocketConsumer):
    """Tells a sweep's page {"type": "changed"} on each nudge; the page then reads the sweep (and
    also polls, since the in-memory channel layer cannot cross from a worker process)."""

    async def connect(self):
        user = self.scope["user"]
        self.sweep_id = int(self.scope["url_route"]["kwargs"]["pk"])
        if not user.is_authenticated or not await database_sync_to_async(Sweep.objects.filter(pk=self.sweep_id, owner=user).exists)():
            await self.close(code=4404)
            return
        self.joined = True
        await self.channel_layer.group_add(events.sweep_group_name(self.sweep_id), self.channel_name)
        await self.accept()

    async def disconnect(self, code):
        if getattr(self, "joined", False):
            await self.channel_layer.group_discard(events.sweep_group_name(self.sweep_id), self.channel_name)

    async def sweep_nudge(self, message):
        await self.send_json({"type": "changed"})
