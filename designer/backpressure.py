"""Responses sent no faster than the client takes them, under daphne.

Daphne hands each `http.response.body` message of the application to Twisted at once: its `send`
returns before a byte is on the wire, so a streamed response (a download read from disk a piece at
a time, designer/pipelines/downloads.py) is read as fast as the disk goes and waits in the web
process's memory for a slower client: three downloads of a 64 MB model grew the process by 169 MB
on a busy machine (tests/registry/test_downloads.py), as if they were built in memory.

Twisted has the mechanism (a push producer registered with the connection is paused when the
socket's buffer passes 64 KB and resumed when it drains); daphne registers none. Here the request
registers one at its first piece of a body with more to come, and the application's `send` of a
piece waits until the connection is resumed: one asyncio loop runs both (daphne's asyncioreactor),
so the wait costs nothing. A client gone ends the wait (its pieces are then dropped, as before).
"""
from __future__ import annotations

import asyncio

from daphne import server


class Drained:
    """A Twisted push producer standing for the application's response: paused by the connection
    while the client is behind, resumed when it has caught up."""

    def __init__(self):
        self.ready = asyncio.Event()
        self.ready.set()

    def pauseProducing(self):
        self.ready.clear()

    def resumeProducing(self):
        self.ready.set()

    def stopProducing(self):
        self.ready.set()


class PacedReplies:
    """Mixed into daphne's WebRequest (designer/limits.BoundedRequest)."""

    _drained: Drained | None = None

    def handle_reply(self, message):
        body = message["type"] == "http.response.body"
        if body and not message.get("more_body", False) and self._drained is not None:
            self.unregisterProducer()  # before the request finishes (Twisted's order)
            self._drained.stopProducing()
            self._drained = None
        super().handle_reply(message)  # type: ignore[misc]
        if body and message.get("more_body", False) and self._drained is None and not self.finished \
                and self.channel is not None:
            self._drained = Drained()
            self.registerProducer(self._drained, True)

    def connectionLost(self, reason):
        if self._drained is not None:
            self._drained.stopProducing()
        super().connectionLost(reason)  # type: ignore[misc]


_handle_reply = server.Server.handle_reply


async def _paced_handle_reply(self, protocol, message):
    await _handle_reply(self, protocol, message)
    drained = getattr(protocol, "_drained", None)
    if drained is not None:
        await drained.ready.wait()


def install() -> None:
    """The application's `send` waits for a client that is behind (before daphne listens)."""
    server.Server.handle_reply = _paced_handle_reply
