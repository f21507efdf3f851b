"""Personal API tokens: made, checked and revoked here; the middleware (designer/token_auth.py),
the page (token_views.py) and the JSON API (tokens_api.py) call these.

A token is `pd_` and 43 URL-safe characters (32 random bytes). It is high-entropy, so a plain
sha256 of it (no salt, no slow hash) is enough to store: the database holds the digest and the
first characters (to tell tokens apart), never the token itself. A token is looked up by its
digest and the digests are then compared in constant time."""
from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from datetime import timedelta

from django.utils import timezone

from designer.pipelines.models import ApiToken

PREFIX = "pd_"
SHOWN_CHARS = 10  # of the token, on the page and in the API: "pd_" and 7 more
SHAPE = re.compile(r"pd_[A-Za-z0-9_-]{43}")
MAX_NAME = ApiToken._meta.get_field("name").max_length
# last_used_at is written at most once a minute per token: a script's every request need not write
LAST_USED_EVERY = timedelta(seconds=60)
PAGE = "/account/tokens/"


class Refused(Exception):
    """The token is malformed, unknown or revoked: the message says which (answered 401)."""


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def create(owner, name: str) -> tuple[ApiToken, str]:
    """A new token and its secret, which the caller shows once: it cannot be read back."""
    name = (name or "").strip()
    if not name:
        raise ValueError("give the token a name (what script or machine it is for)")
    if len(name) > MAX_NAME:
        raise ValueError(f"a token's name is at most {MAX_NAME} characters")
    if "\x00" in name:  # PostgreSQL's text cannot store it
        raise ValueError("a token's name cannot hold a NUL character (\\x00)")
    secret = PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(owner=owner, name=name, prefix=secret[:SHOWN_CHARS], digest=digest(secret))
    return token, secret


def authenticate(secret: str) -> ApiToken:
    """The active token `secret` is, its last use noted; Refused otherwise."""
    if not SHAPE.fullmatch(secret):
        raise Refused(f"malformed API token: expected `Authorization: Bearer {PREFIX}...` with a token made at {PAGE}")
    wanted = digest(secret)
    token = ApiToken.objects.select_related("owner").filter(digest=wanted).first()
    if token is None or not hmac.compare_digest(token.digest, wanted):
        raise Refused(f"this API token is not valid (mistyped, or deleted); make one at {PAGE}")
    if token.revoked_at is not None:
        raise Refused(f"this API token ({token.name!r}) was revoked on {token.revoked_at:%Y-%m-%d %H:%M} UTC; make a new one at {PAGE}")
    if not token.owner.is_active:
        raise Refused("the account of this API token is disabled")
    _note_use(token)
    return token


def _note_use(token: ApiToken) -> None:
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at >= LAST_USED_EVERY:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now


def active(owner):
    return ApiToken.objects.filter(owner=owner, revoked_at__isnull=True)


def revoke(owner, pk: int) -> ApiToken | None:
    """The owner's active token `pk`, revoked at once; None if they have no such token."""
    token = active(owner).filter(pk=pk).first()
    if token is not None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
    return token


def as_json(token: ApiToken) -> dict:
    return {"id": token.id, "name": token.name, "prefix": token.prefix, "created_at": token.created_at.isoformat(),
            "last_used_at": token.last_used_at and token.last_used_at.isoformat(),
            "revoked_at": token.revoked_at and token.revoked_at.isoformat()}
