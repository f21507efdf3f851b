"""The environment's values parsed for designer/settings.py (which alone reads them): each parser
names the variable and what it expects when a value is wrong, and start-up stops there."""
from __future__ import annotations

import os
from urllib.parse import urlparse

from django.core.exceptions import ImproperlyConfigured


def env_str(name: str, default: str) -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    if raw.lower() in ("1", "true", "yes", "on"):
        return True
    if raw.lower() in ("0", "false", "no", "off", ""):
        return False
    raise ImproperlyConfigured(f"{name}={raw!r}: expected true or false")


def _env_number(name: str, default, minimum, parse, expected: str):
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        value = parse(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r}: expected {expected}")
    if value < minimum:
        raise ImproperlyConfigured(f"{name}={raw!r}: must be at least {minimum}")
    return value


def env_float(name: str, default: float, minimum: float = 0) -> float:
    return _env_number(name, default, minimum, float, "a number")


def env_int(name: str, default: int, minimum: int = 0) -> int:
    return _env_number(name, default, minimum, int, "a whole number")


def env_url(name: str, default: str, schemes: tuple[str, ...]) -> str:
    raw = os.environ.get(name, default)
    scheme = urlparse(raw).scheme
    if scheme not in schemes:
        raise ImproperlyConfigured(f"{name}={raw!r}: expected a URL starting with one of {', '.join(s + '://' for s in schemes)}")
    return raw


def env_ports(name: str, default: str) -> list[int]:
    """`0` (any free port), `29500`, or a range `29500-29510`."""
    raw = os.environ.get(name, default)
    try:
        first, _, last = raw.partition("-")
        ports = list(range(int(first), int(last or first) + 1))
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r}: expected 0, a port (29500) or a range (29500-29510)")
    if not ports or not all(0 <= p <= 65535 for p in ports):
        raise ImproperlyConfigured(f"{name}={raw!r}: ports are between 0 and 65535, the first one not after the last")
    return ports
