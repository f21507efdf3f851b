"""Request bodies are refused from their headers, before they are read.

Where a body is buffered under daphne (production, the browser tests, and `manage.py runserver`,
which is daphne's): Twisted's HTTPChannel parses the headers, calls Request.gotLength(length),
then hands every piece of the body to Request.handleContentChunk, which writes it into
Request.content (memory up to 100 KB, a temporary file beyond, or always a file when no length
is declared). Only when the body is complete does requestReceived() call daphne's
WebRequest.process(), which starts the ASGI application; Django then reads the body again into
its own spooled file. A check in an ASGI middleware or a view therefore comes after the whole
body was on disk (a 300 MB anonymous POST, before its 403).

BoundedRequest is daphne's WebRequest with those three Twisted hooks taken over; install() makes
daphne's HTTP factory build it. At gotLength (headers in, no byte of the body read):
  * a declared length over the limit of the path (DATASET_MAX_UPLOAD_MB for a dataset upload,
    COMPONENT_MAX_UPLOAD_MB for a component upload, REQUEST_MAX_BODY_MB otherwise) is answered 413 at once;
  * a body that may be larger than ANONYMOUS_MAX_BODY_KB (declared so, or of no declared length)
    needs a signed-in session or, under /api/, a personal API token (`Authorization: Bearer`):
    with neither, 413 at once; with one, the connection stops reading while a thread checks it
    (Django's session store and auth, or the token's digest), then reads on or answers 413.
    Under /admin/ the session must be a staff member's: a signed-in user who is not staff has
    the anonymous limit there (the admin's dataset upload is staff's only).
While the body streams, a body of no declared length (chunked) is counted against the same
limits. A refusal answers JSON under /api/ ({"error", "limit_bytes"}), text elsewhere, with
`Connection: close`; what the client goes on sending is read and dropped (never stored) for at
most LINGER_SECONDS or LINGER_BYTES, so that a client that writes its whole body before reading
(a browser) still gets the answer, and the connection is then closed.
"""
from __future__ import annotations

import io
import json
import logging

from daphne import http_protocol
from django.conf import settings
from twisted.internet import threads

from designer import backpressure
from designer.engine import jsontext

logger = logging.getLogger(__name__)

DATASET_UPLOAD_PATH = "/api/datasets"
DATA_PAGE_PATH = "/data/"  # the Data page's upload form
COMPONENT_UPLOAD_PATH = "/api/components"
MULTIPART_SLACK = 64 * 1024  # form boundaries and headers around an uploaded file
LINGER_SECONDS = 2.0
LINGER_BYTES = 32 * 1024 * 1024


def size_text(n: int) -> str:
    return f"{n / 2**20:.1f} MB" if n >= 2**20 else f"{n / 1024:.0f} KB"


def declared_length(request) -> int:
    """The body's length as the request declares it (0: none, or not a number; the server in front
    refuses a malformed header, the test client does not)."""
    return jsontext.whole_number(request.META.get("CONTENT_LENGTH")) or 0


def body_limit(path: str) -> tuple[int, int, str, str]:
    """(bytes a body sent to `path` may have, the limit as the user knows it, its setting, what it is)."""
    if path in (DATASET_UPLOAD_PATH, DATA_PAGE_PATH) or path.startswith("/admin/"):  # the admin may upload a dataset too
        limit = settings.DATASET_MAX_UPLOAD_BYTES
        return limit + MULTIPART_SLACK, limit, "DATASET_MAX_UPLOAD_MB", "the upload"
    if path == COMPONENT_UPLOAD_PATH:  # an archive, or a folder's files (each with its part's headers and path)
        limit = settings.COMPONENT_MAX_UPLOAD_BYTES
        slack = MULTIPART_SLACK + 1024 * (settings.DATA_UPLOAD_MAX_NUMBER_FILES or 0)
        return limit + slack, limit, "COMPONENT_MAX_UPLOAD_MB", "the upload"
    limit = settings.REQUEST_MAX_BODY_BYTES
    return limit, limit, "REQUEST_MAX_BODY_MB", "the request body"


def too_large(path: str, size: int | None) -> tuple[str, int]:
    _, shown, setting, what = body_limit(path)
    size = f"is {size_text(size)}," if size is not None else "is"
    return f"{what} {size} larger than the limit of {size_text(shown)} (setting {setting})", shown


def not_signed_in(size: int | None) -> tuple[str, int]:
    limit = settings.ANONYMOUS_MAX_BODY_BYTES
    size = f"of {size_text(size)} " if size is not None else ""
    return (f"sign in first: a request body {size}from a visitor who is not signed in may be at most "
            f"{size_text(limit)} (setting ANONYMOUS_MAX_BODY_KB)"), limit


def not_staff(size: int | None) -> tuple[str, int]:
    limit = settings.ANONYMOUS_MAX_BODY_BYTES
    size = f"of {size_text(size)} " if size is not None else ""
    return (f"a request body {size}to /admin/ from a user who is not staff may be at most {size_text(limit)} "
            "(setting ANONYMOUS_MAX_BODY_KB)"), limit


def signed_in(session_key: str, staff: bool = False) -> bool:
    """Whether the session is of a user who may sign in (what Django's AuthenticationMiddleware
    would find), and with `staff`, one who may use the admin. Runs on a thread: it reads the
    session store and the user table."""
    from importlib import import_module

    from django.contrib.auth import get_user
    from django.db import connections

    class _Request:
        session = import_module(settings.SESSION_ENGINE).SessionStore(session_key)

    try:
        user = get_user(_Request)
        return user.is_authenticated and (not staff or (user.is_active and user.is_staff))
    finally:
        connections.close_all()  # this thread's connections only (a pool takes them back)


def bearer_token(path: str, headers) -> str | None:
    """The personal API token a request to /api/ carries (`Authorization: Bearer ...`), if any."""
    if not path.startswith("/api/"):
        return None
    raw = (headers.getRawHeaders(b"Authorization") or [b""])[0].decode("latin-1").strip()
    scheme, _, secret = raw.partition(" ")
    return (secret.strip() or None) if scheme.lower() == "bearer" else None


def token_valid(secret: str) -> bool:
    """Whether `secret` is an active personal API token of an active user (what designer/token_auth.py
    would find): looked up by its sha256, as designer/pipelines/accounts/tokens.py stores it, through the app
    registry (the web app imports this module, not the other way). Runs on a thread."""
    import hashlib

    from django.apps import apps
    from django.db import connections

    try:
        return apps.get_model("pipelines", "ApiToken").objects.filter(
            digest=hashlib.sha256(secret.encode()).hexdigest(), revoked_at__isnull=True, owner__is_active=True).exists()
    finally:
        connections.close_all()  # this thread's connections only (a pool takes them back)


class BoundedRequest(backpressure.PacedReplies, http_protocol.WebRequest):
    """daphne's request with the Twisted hooks that receive the body bounded (module docstring),
    and its answer sent no faster than the client takes it (designer/backpressure.py)."""

    _refused = False
    _holding = False  # the session is being checked: the transport is paused, chunks kept here
    _continue = False  # the client waits for "100 Continue" before it sends its body
    _linger = None

    def gotLength(self, length):
        self._uri_path = self.channel._path.split(b"?", 1)[0].decode("latin-1")  # set by HTTPChannel with the request line
        self._limit = body_limit(self._uri_path)[0]
        self._received, self._held, self._complete = 0, [], None
        if length is not None and length <= settings.ANONYMOUS_MAX_BODY_BYTES:
            return super().gotLength(length)
        session_key = self.received_cookies.get(settings.SESSION_COOKIE_NAME.encode())
        token = bearer_token(self._uri_path, self.requestHeaders)  # a script's: it counts over a session
        if not session_key and not token:
            return self._refuse(*not_signed_in(length))
        if length is not None and length > self._limit:
            return self._refuse(*too_large(self._uri_path, length))
        super().gotLength(length)
        self._hold()
        admin = self._uri_path.startswith("/admin/")
        check = (token_valid, token) if token else (signed_in, session_key.decode("latin-1"), admin)
        refusal = not_staff if admin and not token else not_signed_in
        threads.deferToThread(*check).addCallbacks(
            lambda ok: self._release() if ok else self._refuse(*refusal(length)), self._check_failed)

    def handleContentChunk(self, data):
        if self._refused:
            self._received += len(data)
            if self._received > LINGER_BYTES:
                self._close()
            return
        self._received += len(data)
        if self._received > self._limit:  # a body of no declared length, while it streams
            return self._refuse(*too_large(self._uri_path, None))
        if self._holding:
            self._held.append(data)
            self.transport.pauseProducing()
            return
        super().handleContentChunk(data)

    def requestReceived(self, command, path, version):
        if self._refused:
            return self._close()  # the whole body was dropped: nothing more to wait for
        if self._holding:
            self._complete = (command, path, version)
            return
        super().requestReceived(command, path, version)

    # ---- the session check

    def _hold(self):
        self._holding = True
        if self.requestHeaders.getRawHeaders(b"Expect", [b""])[0].lower() == b"100-continue":
            self.requestHeaders.removeHeader(b"Expect")  # Twisted would send it now: sent once allowed
            self._continue = True
        self.transport.pauseProducing()

    def _release(self):
        if self._refused or self._disconnected:
            return
        self._holding = False
        for chunk in self._held:
            super().handleContentChunk(chunk)
        self._held = []
        if self._continue:
            self.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        if self._complete:
            super().requestReceived(*self._complete)
        self.transport.resumeProducing()

    def _check_failed(self, failure):
        logger.error("could not check the session of a request: %s", failure.getErrorMessage(),
                     exc_info=(failure.type, failure.value, failure.getTracebackObject()))
        self._refuse("the server could not check your session; try again", None, status=503)

    # ---- refusing

    def _refuse(self, message: str, limit: int | None, status: int = 413):
        if self._refused or self._disconnected:
            return
        self._refused, self._held = True, []
        self.content = io.BytesIO()  # nothing of the body is kept
        self.requestHeaders.removeHeader(b"Expect")  # no "100 Continue" after the answer
        self.channel.persistent = False
        if self._uri_path.startswith("/api/"):
            body = json.dumps({"error": message, **({"limit_bytes": limit} if limit is not None else {})}).encode()
            ctype = b"application/json"
        else:
            body, ctype = message.encode() + b"\n", b"text/plain; charset=utf-8"
        reason = b"Content Too Large" if status == 413 else b"Service Unavailable"
        self.transport.write(b"HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s"
                             % (status, reason, ctype, len(body), body))
        logger.warning("%s %s refused (%d): %s", self.channel._command.decode("latin-1"), self._uri_path, status, message)
        self.transport.resumeProducing()  # read on (dropping it) while the client may still be writing
        from twisted.internet import reactor  # daphne.server installs the asyncio reactor first

        self._linger = reactor.callLater(LINGER_SECONDS, self._close)

    def _close(self):
        if self._linger is not None and self._linger.active():
            self._linger.cancel()
        if not self._disconnected and self.channel is not None:
            self.channel.loseConnection()


def install() -> None:
    """Make daphne's HTTP factory build BoundedRequest: HTTPFactory.buildProtocol sets
    `protocol.requestFactory = WebRequest`, read from daphne.http_protocol when each connection
    is made, so this must run before daphne listens (designer/asgi.py, which both `daphne` and
    `manage.py runserver` import before they start)."""
    http_protocol.WebRequest = BoundedRequest
    backpressure.install()
