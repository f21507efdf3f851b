"""uvicorn's httptools protocol with a deadline on a request's headers: uvicorn closes an idle
kept-alive connection (timeout_keep_alive) but waits for ever on one whose headers come a byte at
a time (2,200 such connections stayed open 60 s). From a request's first byte, its headers have
SERVING_HEADER_SECONDS to arrive; then the connection is closed. (The body's deadline is app.py's.)"""
from __future__ import annotations

from django.conf import settings
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    _header_timer = None

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._cancel_header_timer()
        self._header_timer = self.loop.call_later(settings.SERVING_HEADER_SECONDS, self._headers_too_slow)

    def on_headers_complete(self) -> None:
        self._cancel_header_timer()
        super().on_headers_complete()

    def connection_lost(self, exc) -> None:
        self._cancel_header_timer()
        super().connection_lost(exc)

    def _headers_too_slow(self) -> None:
        self._header_timer = None
        if not self.transport.is_closing():
            self.transport.close()

    def _cancel_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None
