"""The store that the ARTIFACT_STORE setting names: a folder (store.py's LocalStore) or a bucket
(s3store.py's S3Store; boto3 itself is loaded only when a bucket is opened)."""
from __future__ import annotations

from pathlib import Path

from designer.engine.s3store import S3Store
from designer.engine.store import LocalStore, Store, StoreError


def open_store(setting: str, endpoint_url: str | None = None) -> Store:
    """`s3://bucket[/prefix]` (at `endpoint_url`, or AWS itself), or an absolute folder."""
    if setting.startswith("s3://"):
        return S3Store(setting, endpoint_url)
    if "://" in setting:
        raise StoreError(f"ARTIFACT_STORE={setting!r}: a store is an absolute folder or s3://bucket/prefix")
    path = Path(setting)
    if not path.is_absolute():
        raise StoreError(f"ARTIFACT_STORE={setting!r}: a folder must be an absolute path")
    return LocalStore(path)
