"""The artifact store: one interface for where every artifact lives, a local folder or an
S3-compatible bucket (AWS S3, SeaweedFS, Ceph RGW, Garage, MinIO).

Code that runs a node asks for "this node's inputs, here" (artifact_cache.py fetches them) and
"keep these outputs" (`upload_tree`); the web app reads what a run left through `open`,
`read_range` and `manifest`. Nothing outside this module builds a path into the store or calls
boto3.

Keys are POSIX paths relative to the store's root, laid out as designer/engine/paths.py says
(`<run id>/<node id>/<port>`, `<run id>/<node id>/logs/<file>`, `datasets/...`, `models/...`,
`components/...`). A *tree* is a folder kept as a whole (a node's output): its files are uploaded
first and its manifest last (`_manifests/<key>.json`: every file with its size and SHA-256, and
the other trees its files refer to). A tree without a manifest does not exist for any reader, so
a worker killed half way through an upload leaves nothing that can be read or reused.

LocalStore keeps the same layout in a folder (the embedded default, as `ARTIFACT_ROOT` always
was): its trees need no copy, `local_root()` hands their folder to whoever runs a node.
S3Store talks to a bucket through boto3 (multipart transfers in parallel, retries, presigned URLs).
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO, Any
from urllib.parse import urlparse

MANIFESTS = "_manifests"
MANIFEST_VERSION = 1
CHUNK = 8 * 1024 * 1024  # multipart part size, and the read size of streamed downloads
TRANSFER_THREADS = 8


class StoreError(Exception):
    """The store cannot be used: unreachable, a missing bucket, refused credentials, a full disk.
    The message names the setting and the bucket, and what to do."""


class NotInStore(StoreError):
    """No object (or no complete tree) under this key."""


@dataclass
class Manifest:
    """A complete tree: its files (relative path -> size, SHA-256) and the trees it refers to."""

    key: str
    files: dict[str, dict] = field(default_factory=dict)
    refs: list[str] = field(default_factory=list)

    @property
    def size(self) -> int:
        return sum(int(f["size"]) for f in self.files.values())

    def to_json(self) -> bytes:
        return json.dumps({"version": MANIFEST_VERSION, "key": self.key, "files": self.files, "refs": self.refs},
                          sort_keys=True).encode()

    @classmethod
    def from_json(cls, raw: bytes) -> Manifest:
        doc = json.loads(raw)
        return cls(doc["key"], dict(doc.get("files") or {}), list(doc.get("refs") or []))


def check_key(key: str) -> str:
    """A key as the store keeps it: relative, `/`-separated, no `.`/`..` parts, no empty parts."""
    if not isinstance(key, str) or not key or key.startswith("/") or "\0" in key or "\\" in key:
        raise ValueError(f"{key!r:.120} is not an artifact key")
    parts = key.split("/")
    if any(p in ("", ".", "..") for p in parts) or parts[0] == MANIFESTS:
        raise ValueError(f"{key!r:.120} is not an artifact key")
    return key


def check_object_key(key: str) -> str:
    """Any key `walk()` gives: an artifact key, or a tree's manifest `_manifests/<key>.json`."""
    if isinstance(key, str) and key.startswith(f"{MANIFESTS}/") and key.endswith(".json"):
        check_key(key[len(MANIFESTS) + 1:-len(".json")])
        return key
    return check_key(key)


def file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            h.update(chunk)
    return h.hexdigest()


def scan_tree(folder: Path, digests: bool = True) -> dict[str, dict]:
    """Every regular file below `folder` (symbolic links followed only when they stay inside it):
    relative POSIX path -> {size, sha256} (sha256 empty unless `digests`)."""
    folder = Path(folder)
    root = folder.resolve()
    files = {}
    for path in sorted(folder.rglob("*")):
        if not path.is_file():
            continue
        if path.is_symlink() and not path.resolve().is_relative_to(root):
            continue  # a link to another tree's file (an input's image): that tree is a ref, not a copy
        files[path.relative_to(folder).as_posix()] = {"size": path.stat().st_size,
                                                       "sha256": file_digest(path) if digests else ""}
    return files


class Store:
    """What every store offers. Keys: see the module's docstring."""

    url: str

    def describe(self) -> str:
        return self.url

    def check(self) -> None:
        """Raise StoreError (naming the setting, the bucket and the cause) unless the store can be
        read and written."""
        raise NotImplementedError

    def local_root(self) -> Path | None:
        """The folder that holds every key as a file, when there is one (LocalStore): nothing need
        be fetched or uploaded. None for a remote store."""
        return None

    # ---- trees
    def upload_tree(self, key: str, folder: Path, refs: list[str] | tuple = ()) -> Manifest:
        raise NotImplementedError

    def manifest(self, key: str) -> Manifest | None:
        """The manifest of the complete tree at `key`; None when there is none (never uploaded, or
        an upload that did not finish)."""
        raw = self._get_optional(f"{MANIFESTS}/{check_key(key)}.json")
        return Manifest.from_json(raw) if raw is not None else None

    def download_tree(self, manifest: Manifest, dest: Path) -> None:
        raise NotImplementedError

    # ---- single objects
    def put_file(self, key: str, path: Path) -> None:
        raise NotImplementedError

    def put_bytes(self, key: str, data: bytes) -> None:
        raise NotImplementedError

    def open(self, key: str) -> IO[bytes]:
        """A binary stream of the object (read a piece at a time); NotInStore when there is none."""
        raise NotImplementedError

    def size(self, key: str) -> int | None:
        raise NotImplementedError

    def read_range(self, key: str, offset: int, length: int) -> bytes:
        """At most `length` bytes from `offset` (b"" past the end); NotInStore when there is none."""
        raise NotImplementedError

    def read_bytes(self, key: str, limit: int) -> bytes:
        """The whole object, refused (StoreError) when larger than `limit`."""
        size = self.size(key)
        if size is None:
            raise NotInStore(f"{self.describe()}: no object {key!r}")
        if size > limit:
            raise StoreError(f"{key!r} is {size} bytes, more than the {limit} read here")
        return self.read_range(key, 0, size)

    def list(self, prefix: str) -> list[tuple[str, int]]:
        """(path relative to `prefix`, size) of every object below the folder `prefix`, sorted."""
        raise NotImplementedError

    def delete_prefix(self, prefix: str) -> int:
        """Remove every object below the folder `prefix` and the manifests of trees below it
        (manifest first: a reader never sees a tree with files missing); the number removed."""
        raise NotImplementedError

    def download_url(self, key: str, filename: str, seconds: int = 300) -> str | None:
        """A URL the browser can fetch the object from directly (S3: presigned), or None."""
        return None

    # ---- every object as it is kept (manage.py copy_store): keys as check_object_key takes them
    def walk(self) -> Iterator[tuple[str, int]]:
        """(key, size) of every object of the store, the trees' manifests included, sorted."""
        raise NotImplementedError

    def get_object(self, key: str, path: Path) -> None:
        """The object (a manifest too) written to the file `path`; NotInStore when there is none."""
        raise NotImplementedError

    def put_object(self, key: str, path: Path) -> None:
        """The file `path` as the object `key` (a manifest too: put it after its tree's files)."""
        raise NotImplementedError

    def sha256(self, key: str) -> str:
        """The SHA-256 of the object's bytes as they are in the store (read through)."""
        raise NotImplementedError

    def _get_optional(self, key: str) -> bytes | None:
        try:
            return self.read_range(key, 0, 1 << 40)
        except NotInStore:
            return None


# ---------------------------------------------------------------- a local folder


class LocalStore(Store):
    """The store as a folder: `<root>/<key>`, manifests in `<root>/_manifests/`. Writes go to a
    temporary name first and are renamed into place."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.url = str(self.root)

    def check(self) -> None:
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=self.root, prefix=".check-"):
                pass
        except OSError as e:
            raise StoreError(f"ARTIFACT_STORE={self.url}: cannot write in this folder ({e.strerror or e})") from None

    def local_root(self) -> Path:
        return self.root

    def path(self, key: str) -> Path:
        return self.root.joinpath(*check_key(key).split("/"))

    def upload_tree(self, key, folder, refs=()):
        target = self.path(key)
        folder = Path(folder)
        if folder.resolve() != target.resolve():
            tmp = target.with_name(f".{target.name}.incoming-{os.getpid()}-{threading.get_ident()}")
            shutil.rmtree(tmp, ignore_errors=True)
            shutil.copytree(folder, tmp, symlinks=True)
            shutil.rmtree(target, ignore_errors=True)
            tmp.rename(target)
        manifest = Manifest(key, scan_tree(target), sorted(set(refs)))
        self.put_bytes(f"{MANIFESTS}/{key}.json", manifest.to_json(), checked=False)
        return manifest

    def manifest(self, key):
        path = self.root / MANIFESTS / f"{check_key(key)}.json"
        if path.is_file():
            return Manifest.from_json(path.read_bytes())
        # a folder written before manifests existed (or by this store itself, in place): complete
        # if it exists at all, since a node's outputs only ever appear by a rename
        folder = self.path(key)
        return Manifest(key, scan_tree(folder, digests=False)) if folder.is_dir() else None

    def download_tree(self, manifest, dest):
        dest = Path(dest)
        source = self.path(manifest.key)
        for rel in manifest.files:
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source / rel, target)

    def put_file(self, key, path):
        self.put_object(check_key(key), path)

    def put_object(self, key, path):
        target = self.root.joinpath(*check_object_key(key).split("/"))
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.incoming-{os.getpid()}-{threading.get_ident()}")
        shutil.copyfile(path, tmp)
        tmp.rename(target)

    def get_object(self, key, path):
        source = self.root.joinpath(*check_object_key(key).split("/"))
        if not source.is_file():
            raise NotInStore(f"{self.url}: no object {key[:200]!r}")
        shutil.copyfile(source, path)

    def sha256(self, key):
        source = self.root.joinpath(*check_object_key(key).split("/"))
        if not source.is_file():
            raise NotInStore(f"{self.url}: no object {key[:200]!r}")
        return file_digest(source)

    def walk(self):
        root = self.root.resolve()
        found = []
        for path in self.root.rglob("*"):
            rel = path.relative_to(self.root)
            if any(p.startswith(".") and (".incoming-" in p or p.startswith(".check-")) for p in rel.parts):
                continue  # a write in progress (or a crashed one), never an object
            if path.is_file() and not (path.is_symlink() and not path.resolve().is_relative_to(root)):
                found.append((rel.as_posix(), path.stat().st_size))
        return iter(sorted(found))

    def put_bytes(self, key, data, checked=True):
        target = self.path(key) if checked else self.root.joinpath(*key.split("/"))
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.incoming-{os.getpid()}-{threading.get_ident()}")
        tmp.write_bytes(data)
        tmp.rename(target)

    def open(self, key):
        try:
            return self.path(key).open("rb")
        except OSError:  # none, a folder, or a name longer than the file system takes
            raise NotInStore(f"{self.url}: no object {key[:200]!r}") from None

    def size(self, key):
        try:
            stat = self.path(key).stat()
        except OSError:
            return None
        return stat.st_size if stat.st_mode & 0o100000 else None

    def read_range(self, key, offset, length):
        with self.open(key) as f:
            f.seek(offset)
            return f.read(length)

    def _get_optional(self, key):
        path = self.root.joinpath(*key.split("/"))
        return path.read_bytes() if path.is_file() else None

    def list(self, prefix):
        folder = self.path(prefix)
        if not folder.is_dir():
            return []
        return [(f.relative_to(folder).as_posix(), f.stat().st_size) for f in sorted(folder.rglob("*")) if f.is_file()]

    def delete_prefix(self, prefix):
        manifests = self.root / MANIFESTS / check_key(prefix)
        shutil.rmtree(manifests, ignore_errors=True)
        Path(f"{manifests}.json").unlink(missing_ok=True)
        folder = self.path(prefix)
        count = sum(1 for f in folder.rglob("*") if f.is_file()) if folder.is_dir() else 0
        shutil.rmtree(folder, ignore_errors=True)
        return count


# ---------------------------------------------------------------- an S3-compatible bucket


def _boto():
    import boto3  # imported when a store is opened: the embedded app never needs it
    import botocore.config
    import botocore.exceptions
    from boto3.s3.transfer import TransferConfig
    return boto3, botocore, TransferConfig


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
        config = botocore.config.Config(connect_timeout=connect_timeout, read_timeout=60,
                                        retries={"max_attempts": retries, "mode": "standard"},
                                        max_pool_connections=TRANSFER_THREADS * 2,
                                        s3={"addressing_style": "path"} if self.endpoint_url else {})
        self.s3 = boto3.session.Session().client("s3", endpoint_url=self.endpoint_url, config=config)
        self.transfer = TransferConfig(multipart_threshold=CHUNK, multipart_chunksize=CHUNK,
                                       max_concurrency=TRANSFER_THREADS, io_chunksize=1024 * 1024)

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
        elif isinstance(e, OSError) and getattr(e, "errno", None) == 28:
            why = "no space left on this machine's disk"
        else:
            why = f"{type(e).__name__}: {e}"
        return StoreError(f"{self.describe()}: {doing}: {why}")

    def _call(self, doing: str, fn, *args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except self._errors.ClientError as e:
            code = str(e.response.get("Error", {}).get("Code", ""))
            if code in ("NoSuchKey", "404", "NotFound") and doing != "check":
                raise NotInStore(f"{self.describe()}: no object ({doing})") from None
            raise self._explain(e, doing) from None
        except (self._errors.BotoCoreError, OSError) as e:
            raise self._explain(e, doing) from None

    def check(self):
        self._call("check", self.s3.head_bucket, Bucket=self.bucket)
        probe = self._key(f"{MANIFESTS}/.check")
        self._call("check (writing a test object)", self.s3.put_object, Bucket=self.bucket, Key=probe, Body=b"ok")
        self._call("check (removing the test object)", self.s3.delete_object, Bucket=self.bucket, Key=probe)

    # ---- trees
    def upload_tree(self, key, folder, refs=()):
        folder = Path(folder)
        files = scan_tree(folder)
        from concurrent.futures import ThreadPoolExecutor

        def one(rel):
            self._call(f"uploading {key}/{rel}", self.s3.upload_file, str(folder / rel), self.bucket,
                       self._key(f"{check_key(key)}/{rel}"), Config=self.transfer)
        small = [r for r, f in files.items() if f["size"] < CHUNK]
        with ThreadPoolExecutor(TRANSFER_THREADS) as pool:  # small files side by side; large ones
            list(pool.map(one, small))                      # each in parallel parts by boto3
        for rel in files:
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
        small = [r for r, f in manifest.files.items() if int(f["size"]) < CHUNK]
        with ThreadPoolExecutor(TRANSFER_THREADS) as pool:
            list(pool.map(one, small))
        for rel in manifest.files:
            if rel not in small:
                one(rel)

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
        answer = self._call(f"reading {key}", self.s3.get_object, Bucket=self.bucket, Key=self._key(check_key(key)))
        return _Body(answer["Body"], int(answer["ContentLength"]))

    def size(self, key):
        try:
            head = self._call(f"looking up {key}", self.s3.head_object, Bucket=self.bucket, Key=self._key(check_key(key)))
        except NotInStore:
            return None
        return int(head["ContentLength"])

    def read_range(self, key, offset, length):
        if length <= 0:
            return b""
        try:
            answer = self._call(f"reading {key}", self.s3.get_object, Bucket=self.bucket, Key=self._key(key),
                                Range=f"bytes={int(offset)}-{int(offset) + int(length) - 1}")
        except StoreError as e:
            if "InvalidRange" in str(e):  # from at or past the end
                return b""
            raise
        return answer["Body"].read()

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
        removed = 0
        for base in (self._key(f"{MANIFESTS}/{prefix}") + "/", self._key(prefix) + "/"):
            for page in self._pages(base):
                keys = [{"Key": o["Key"]} for o in page.get("Contents", [])]
                if keys:
                    self._call(f"removing {prefix}", self.s3.delete_objects, Bucket=self.bucket,
                               Delete={"Objects": keys, "Quiet": True})
                    removed += len(keys)
        return removed

    def download_url(self, key, filename, seconds=300):
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


# ---------------------------------------------------------------- the setting


def open_store(setting: str, endpoint_url: str | None = None) -> Store:
    """The store that the ARTIFACT_STORE setting names: `s3://bucket[/prefix]`, or an absolute folder."""
    if setting.startswith("s3://"):
        return S3Store(setting, endpoint_url)
    if "://" in setting:
        raise StoreError(f"ARTIFACT_STORE={setting!r}: a store is an absolute folder or s3://bucket/prefix")
    path = Path(setting)
    if not path.is_absolute():
        raise StoreError(f"ARTIFACT_STORE={setting!r}: a folder must be an absolute path")
    return LocalStore(path)


def join(*parts: str) -> str:
    """Keys joined with `/` (each checked)."""
    return check_key("/".join(str(PurePosixPath(p)) for p in parts))
