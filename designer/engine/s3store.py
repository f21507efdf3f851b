"""The artifact store in an S3-compatible bucket (AWS S3, SeaweedFS, Ceph RGW, Garage, MinIO)
through boto3: multipart transfers in parallel, retries, presigned URLs. The interface, the
layout of keys and manifests: store.py; a tree's small files travel in packs: packs.py."""
from __future__ import annotations

import errno
import hashlib
import io
import threading
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from designer.engine import packs
from designer.engine.store import (
    CHUNK,
    MANIFESTS,
    TRANSFER_THREADS,
    DiskFull,
    Manifest,
    NotInStore,
    Store,
    StoreError,
    check_key,
    check_object_key,
    scan_tree,
)


def _boto():
    import boto3  # imported when a store is opened: the embedded app never needs it
    import boto3.exceptions
    import botocore.config
    import botocore.exceptions
    from boto3.s3.transfer import TransferConfig
    return boto3, botocore, TransferConfig


PACK_THREADS = 4  # packs moved side by side (each held in memory whole: at most PACK_BYTES)
KNOWN_TREES = 512  # manifests kept to find packed files (a tree's thumbnails read one after another)
TREE_DEPTH = 6  # folders above a file looked up for the tree that packed it


class S3Store(Store):
    """`s3://bucket/prefix` through boto3. The endpoint URL (settings: ARTIFACT_STORE_ENDPOINT_URL,
    or boto's own AWS_ENDPOINT_URL) points it at any S3-compatible server; credentials and region
    come from boto3's usual chain (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_DEFAULT_REGION,
    ~/.aws, an instance role)."""

    def __init__(self, url: str, endpoint_url: str | None = None, connect_timeout: float = 5, retries: int = 4):
        parsed = urlparse(url)
        if parsed.scheme != "s3" or not parsed.netloc:
            raise StoreError(f"ARTIFACT_STORE={url!r}: an S3 store is s3://bucket or s3://bucket/prefix")
        self.url = url
        self.bucket = parsed.netloc
        self.prefix = parsed.path.strip("/")
        self.endpoint_url = endpoint_url or None
        boto3, botocore, TransferConfig = _boto()
        self._errors = botocore.exceptions
        self._transfer_errors = boto3.exceptions.Boto3Error
        # SigV4 for presigned links too (boto3 would sign them with SigV2 here, which newer AWS
        # regions and SeaweedFS refuse)
        config = botocore.config.Config(connect_timeout=connect_timeout, read_timeout=60, signature_version="s3v4",
                                        retries={"max_attempts": retries, "mode": "standard"},
                                        max_pool_connections=TRANSFER_THREADS * 2,
                                        s3={"addressing_style": "path"} if self.endpoint_url else {})
        self.s3 = boto3.session.Session().client("s3", endpoint_url=self.endpoint_url, config=config)
        self.transfer = TransferConfig(multipart_threshold=CHUNK, multipart_chunksize=CHUNK,
                                       max_concurrency=TRANSFER_THREADS, io_chunksize=1024 * 1024)
        # manifests read here, to find a packed file's pack: never to say that a tree exists
        self._trees: OrderedDict[str, Manifest] = OrderedDict()
        self._trees_lock = threading.Lock()

    def describe(self) -> str:
        where = f" at {self.endpoint_url}" if self.endpoint_url else ""
        return f"ARTIFACT_STORE={self.url} (bucket {self.bucket!r}{where})"

    def _key(self, key: str) -> str:
        return f"{self.prefix}/{key}" if self.prefix else key

    def _explain(self, e: Exception, doing: str) -> StoreError:
        """A boto error as a sentence naming the setting and the bucket."""
        errors = self._errors
        if isinstance(e, errors.NoCredentialsError):
            why = "no credentials (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or a profile or role)"
        elif isinstance(e, (errors.EndpointConnectionError, errors.ConnectTimeoutError, errors.ReadTimeoutError,
                            errors.ConnectionClosedError)):
            why = f"the server cannot be reached ({e})"
        elif isinstance(e, errors.ClientError):
            code = str(e.response.get("Error", {}).get("Code", ""))
            status = e.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            if code in ("NoSuchBucket",) or (code == "404" and doing == "check"):
                why = f"the bucket {self.bucket!r} does not exist (create it, or correct ARTIFACT_STORE)"
            elif code in ("InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "403", "InvalidToken",
                          "ExpiredToken") or status == 403:
                why = f"the credentials were refused ({code or status}: check AWS_ACCESS_KEY_ID, " \
                      f"AWS_SECRET_ACCESS_KEY and the bucket's policy)"
            else:
                why = f"{code or status}: {e.response.get('Error', {}).get('Message', '')}".strip()
        elif isinstance(e, OSError) and getattr(e, "errno", None) == errno.ENOSPC:
            return DiskFull(f"{self.describe()}: {doing}: no space left on this machine's disk")
        else:
            why = f"{type(e).__name__}: {e}"
        return StoreError(f"{self.describe()}: {doing}: {why}")

    def _call(self, doing: str, fn, *args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except self._transfer_errors as e:
            # boto3's transfers wrap the server's answer: S3UploadFailedError (the ClientError as
            # its context), RetriesExceededError (the last error as last_exception)
            cause = getattr(e, "last_exception", None) or e.__context__
            if isinstance(cause, (self._errors.ClientError, self._errors.BotoCoreError, OSError)):
                raise self._error(cause, doing) from None
            raise StoreError(f"{self.describe()}: {doing}: {type(e).__name__}: {e}") from None
        except (self._errors.ClientError, self._errors.BotoCoreError, OSError) as e:
            raise self._error(e, doing) from None

    def _error(self, e: Exception, doing: str) -> StoreError:
        if isinstance(e, self._errors.ClientError):
            code = str(e.response.get("Error", {}).get("Code", ""))
            if code in ("NoSuchKey", "404", "NotFound") and doing != "check":
                return NotInStore(f"{self.describe()}: no object ({doing})")
        return self._explain(e, doing)

    def check(self):
        self._call("check", self.s3.head_bucket, Bucket=self.bucket)
        probe = self._key(f"{MANIFESTS}/.check")
        self._call("check (writing a test object)", self.s3.put_object, Bucket=self.bucket, Key=probe, Body=b"ok")
        self._call("check (removing the test object)", self.s3.delete_object, Bucket=self.bucket, Key=probe)

    # ---- trees
    def upload_tree(self, key, folder, refs=()):
        folder = Path(folder)
        files = scan_tree(folder)
        bundles, alone = packs.plan(files)
        upload = packs.upload_id()
        from concurrent.futures import ThreadPoolExecutor

        def one(rel):
            self._call(f"uploading {key}/{rel}", self.s3.upload_file, str(folder / rel), self.bucket,
                       self._key(f"{check_key(key)}/{rel}"), Config=self.transfer)

        def pack(item):
            n, rels = item
            name = f"{upload}-{n}"
            data = packs.read(folder, rels, files, name)
            self._put(packs.pack_key(check_key(key), name), data)
        small = [r for r in alone if files[r]["size"] < CHUNK]
        # the small files in packs, a few side by side (each read whole); the others side by side,
        # the large ones each in parallel parts by boto3
        with ThreadPoolExecutor(PACK_THREADS) as pool:
            list(pool.map(pack, enumerate(bundles)))
        with ThreadPoolExecutor(TRANSFER_THREADS) as pool:
            list(pool.map(one, small))
        for rel in alone:
            if rel not in small:
                one(rel)
        manifest = Manifest(key, files, sorted(set(refs)))
        self._put(f"{MANIFESTS}/{key}.json", manifest.to_json())  # last: now the tree exists
        return manifest

    def download_tree(self, manifest, dest):
        dest = Path(dest)
        from concurrent.futures import ThreadPoolExecutor

        def one(rel):
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            self._call(f"downloading {manifest.key}/{rel}", self.s3.download_file, self.bucket,
                       self._key(f"{manifest.key}/{rel}"), str(target), Config=self.transfer)
            if target.stat().st_size != int(manifest.files[rel]["size"]):
                raise StoreError(f"{self.describe()}: {manifest.key}/{rel} has {target.stat().st_size} bytes, "
                                 f"its manifest says {manifest.files[rel]['size']}")

        def pack(item):
            name, members = item
            doing = f"downloading {manifest.key} (a pack of {len(members)} files)"
            data = self._body(self._call(doing, self.s3.get_object, Bucket=self.bucket,
                                         Key=self._key(packs.pack_key(manifest.key, name))), doing)
            try:
                packs.split(data, members, dest)
            except OSError as e:
                raise StoreError(f"{self.describe()}: {manifest.key}: {e}") from None
        alone = [r for r, f in manifest.files.items() if not f.get("pack")]
        small = [r for r in alone if int(manifest.files[r]["size"]) < CHUNK]
        with ThreadPoolExecutor(PACK_THREADS) as pool:
            list(pool.map(pack, packs.members(manifest.files).items()))
        with ThreadPoolExecutor(TRANSFER_THREADS) as pool:
            list(pool.map(one, small))
        for rel in alone:
            if rel not in small:
                one(rel)

    def manifest(self, key):
        found = super().manifest(key)
        if found is not None:
            with self._trees_lock:
                self._trees[key] = found
                while len(self._trees) > KNOWN_TREES:
                    self._trees.popitem(last=False)
        return found

    # ---- a tree's file in a pack (packs.py)
    def _packed(self, key: str) -> tuple[str, int, int] | None:
        """Where the file `key` is when a manifest read here put it in a pack: (the pack's key,
        offset, size); None when no manifest read here says so."""
        parts = key.split("/")
        with self._trees_lock:
            for n in range(len(parts) - 1, 0, -1):
                tree = self._trees.get("/".join(parts[:n]))
                if tree is not None:
                    f = tree.files.get("/".join(parts[n:]))
                    if f is None or not f.get("pack"):
                        return None
                    return packs.pack_key(tree.key, str(f["pack"])), int(f["offset"]), int(f["size"])
        return None

    def _find_packed(self, key: str) -> tuple[str, int, int] | None:
        """When the object `key` is not in the bucket: the manifests of the folders above it,
        deepest first, for a tree that keeps it in a pack."""
        parts = key.split("/")
        if parts[0] in (MANIFESTS, packs.PACKS):
            return None
        for n in range(len(parts) - 1, max(0, len(parts) - 1 - TREE_DEPTH), -1):
            if self.manifest("/".join(parts[:n])) is not None:
                return self._packed(key)
        return None

    def _forget(self, key: str) -> None:
        with self._trees_lock:
            for tree in [t for t in self._trees if key == t or key.startswith(f"{t}/") or t.startswith(f"{key}/")]:
                del self._trees[tree]

    def _get(self, key: str, first: int = 0, length: int | None = None) -> dict:
        """GetObject of `key` (from `first`, `length` bytes or to the end), a packed file's bytes
        read from its pack."""
        where = self._packed(key)
        if where is not None:
            try:
                return self._get_packed(where, first, length, key)
            except NotInStore:
                self._forget(key)  # its tree was deleted since (and perhaps written again)
        try:
            return self._get_object(self._key(key), first, length, key)
        except NotInStore:
            where = self._find_packed(key)
            if where is None:
                raise
        return self._get_packed(where, first, length, key)

    def _get_packed(self, where: tuple[str, int, int], first: int, length: int | None, key: str) -> dict:
        pack, offset, size = where
        end = size if length is None else min(size, first + length)
        if first >= end:
            return {"Body": io.BytesIO(b""), "ContentLength": 0}
        return self._get_object(self._key(pack), offset + first, end - first, key)

    def _get_object(self, full_key: str, first: int, length: int | None, key: str) -> dict:
        ranged = {} if first == 0 and length is None else \
            {"Range": f"bytes={first}-{first + length - 1}" if length is not None else f"bytes={first}-"}
        return self._call(f"reading {key}", self.s3.get_object, Bucket=self.bucket, Key=full_key, **ranged)

    def _body(self, answer: dict, doing: str) -> bytes:
        try:
            return answer["Body"].read()
        except (self._errors.BotoCoreError, OSError) as e:
            raise self._explain(e, doing) from None

    # ---- single objects
    def _put(self, key, data: bytes):
        self._call(f"writing {key}", self.s3.put_object, Bucket=self.bucket, Key=self._key(key), Body=data)

    def put_file(self, key, path):
        self.put_object(check_key(key), path)

    def put_object(self, key, path):
        self._call(f"uploading {key}", self.s3.upload_file, str(path), self.bucket, self._key(check_object_key(key)),
                   Config=self.transfer)

    def get_object(self, key, path):
        self._call(f"downloading {key}", self.s3.download_file, self.bucket, self._key(check_object_key(key)),
                   str(path), Config=self.transfer)

    def sha256(self, key):
        answer = self._call(f"reading {key}", self.s3.get_object, Bucket=self.bucket, Key=self._key(check_object_key(key)))
        h = hashlib.sha256()
        try:
            for chunk in answer["Body"].iter_chunks(1024 * 1024):
                h.update(chunk)
        except (self._errors.BotoCoreError, OSError) as e:
            raise self._explain(e, f"reading {key}") from None
        return h.hexdigest()

    def walk(self):
        base = f"{self.prefix}/" if self.prefix else ""
        found = [(o["Key"][len(base):], int(o["Size"])) for page in self._pages(base) for o in page.get("Contents", [])]
        # (a "folder" some tools make is no object; the check's probe is gone in a moment)
        return iter(sorted(k for k in found if not k[0].endswith("/") and k[0] != f"{MANIFESTS}/.check"))

    def put_bytes(self, key, data):
        self._put(check_key(key), data)

    def open(self, key):
        answer = self._get(check_key(key))
        return _Body(answer["Body"], int(answer["ContentLength"]))

    def size(self, key):
        where = self._packed(check_key(key))
        if where is None:
            try:
                head = self._call(f"looking up {key}", self.s3.head_object, Bucket=self.bucket, Key=self._key(key))
                return int(head["ContentLength"])
            except NotInStore:
                where = self._find_packed(key)
        return where[2] if where is not None else None

    def read_range(self, key, offset, length):
        if length <= 0:
            return b""
        try:
            answer = self._get(key, int(offset), int(length))
        except StoreError as e:
            if "InvalidRange" in str(e):  # from at or past the end
                return b""
            raise
        return self._body(answer, f"reading {key}")

    def list(self, prefix):
        base = self._key(check_key(prefix)) + "/"
        found = []
        for page in self._pages(base):
            for obj in page.get("Contents", []):
                found.append((obj["Key"][len(base):], int(obj["Size"])))
        return sorted(found)

    def _pages(self, base: str) -> Iterator[dict]:
        token: dict[str, Any] = {}
        while True:
            page = self._call(f"listing {base}", self.s3.list_objects_v2, Bucket=self.bucket, Prefix=base, **token)
            yield page
            if not page.get("IsTruncated"):
                return
            token = {"ContinuationToken": page["NextContinuationToken"]}

    def delete_prefix(self, prefix):
        check_key(prefix)
        self._call("removing a manifest", self.s3.delete_object, Bucket=self.bucket,
                   Key=self._key(f"{MANIFESTS}/{prefix}.json"))
        self._forget(prefix)
        removed = 0
        for base in (self._key(f"{MANIFESTS}/{prefix}") + "/", self._key(prefix) + "/",
                     self._key(packs.pack_key(prefix, "")).rstrip("/") + "/"):
            for page in self._pages(base):
                keys = [{"Key": o["Key"]} for o in page.get("Contents", [])]
                if keys:
                    self._call(f"removing {prefix}", self.s3.delete_objects, Bucket=self.bucket,
                               Delete={"Objects": keys, "Quiet": True})
                    removed += len(keys)
        return removed

    def download_url(self, key, filename, seconds=300):
        if self.size(check_key(key)) is None or self._packed(key) is not None:
            return None  # a file kept in a pack: the web app streams its bytes (a link cannot ask for a range)
        safe = filename.replace('"', "")
        return self.s3.generate_presigned_url(
            "get_object", ExpiresIn=seconds,
            Params={"Bucket": self.bucket, "Key": self._key(check_key(key)),
                    "ResponseContentDisposition": f'attachment; filename="{safe}"'})


class _Body(io.RawIOBase):
    """An S3 object's body as a readable binary stream (what Django's FileResponse reads)."""

    def __init__(self, body, length: int):
        self._body = body
        self.length = length

    def readable(self):
        return True

    def read(self, size=-1):
        return self._body.read(None if size is None or size < 0 else size)

    def readinto(self, b):
        data = self._body.read(len(b))
        b[:len(data)] = data
        return len(data)

    def close(self):
        try:
            self._body.close()
        finally:
            super().close()


