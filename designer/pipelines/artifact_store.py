"""This deployment's artifact store (settings.ARTIFACT_STORE, designer/engine/store.py) and, on a
worker with a remote store, its cache (settings.WORKER_CACHE_DIR, designer/engine/artifact_cache.py).

One store object per process and setting (boto3's client is thread-safe and keeps its connections).
"""
from __future__ import annotations

import threading

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from designer.engine.artifact_cache import ArtifactCache
from designer.engine.store import Store, StoreError, open_store

_lock = threading.Lock()
_opened: dict[tuple, Store] = {}
_caches: dict[tuple, ArtifactCache] = {}


def get() -> Store:
    """The store that ARTIFACT_STORE names (a LocalStore at ARTIFACT_ROOT by default)."""
    key = (settings.ARTIFACT_STORE, settings.ARTIFACT_STORE_ENDPOINT_URL)
    with _lock:
        if key not in _opened:
            _opened[key] = open_store(*key)
        return _opened[key]


def is_remote() -> bool:
    """Whether artifacts live somewhere no path reaches (a bucket): nodes then fetch and upload."""
    return get().local_root() is None


def cache() -> ArtifactCache:
    """This worker's cache of the store's trees."""
    key = (settings.ARTIFACT_STORE, str(settings.WORKER_CACHE_DIR), settings.WORKER_CACHE_MB)
    with _lock:
        if key not in _caches:
            _caches[key] = ArtifactCache(get(), settings.WORKER_CACHE_DIR, int(settings.WORKER_CACHE_MB * 1024 * 1024))
        return _caches[key]


def check_at_start() -> None:
    """Stop a process's start-up with a sentence naming the setting and the bucket when the store
    cannot be read and written (unreachable, no such bucket, refused credentials)."""
    try:
        get().check()
    except StoreError as e:
        raise ImproperlyConfigured(f"The artifact store cannot be used: {e}") from None
