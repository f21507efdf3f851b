"""The web app and a worker check the artifact store when they start: a bucket that does not
exist, a server that cannot be reached or refused credentials stop them with a sentence that
names the setting and the bucket, before anything is run or served."""
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT, TEST_DATA
from tests.s3server import s3_server  # noqa: F401 - a fixture
from tests.servers import free_port

pytestmark = pytest.mark.timeout(120)


def start(code_or_args, store_env: dict, timeout=90) -> subprocess.CompletedProcess:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("AWS_")}, **store_env,
           "DJANGO_SETTINGS_MODULE": "designer.settings", "DESIGNER_DATA_DIR": str(TEST_DATA)}
    args = ["-c", code_or_args] if isinstance(code_or_args, str) else code_or_args
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


WEB = "import designer.asgi"  # what daphne (and runserver) load first


def test_the_web_app_starts_on_a_bucket_it_can_use(s3_server):  # noqa: F811
    done = start(WEB, s3_server.env(prefix=s3_server.new_prefix()))
    assert done.returncode == 0, done.stderr[-2000:]


def test_a_missing_bucket_stops_the_web_app_naming_the_setting_and_the_bucket(s3_server):  # noqa: F811
    done = start(WEB, s3_server.env(bucket="no-such-bucket"))
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert "ARTIFACT_STORE=s3://no-such-bucket" in last and "the bucket 'no-such-bucket' does not exist" in last, last


def test_an_unreachable_server_stops_the_web_app_saying_so(s3_server):  # noqa: F811
    env = {**s3_server.env(), "ARTIFACT_STORE_ENDPOINT_URL": f"http://127.0.0.1:{free_port()}"}  # nothing listens there
    done = start(WEB, env)
    last = done.stderr.strip().splitlines()[-1]
    assert done.returncode != 0 and "ARTIFACT_STORE=s3://artifacts" in last and "cannot be reached" in last, last


def test_a_worker_on_a_missing_bucket_does_not_start(s3_server):  # noqa: F811
    done = start(["-m", "celery", "-A", "designer.celery", "worker", "-c", "1", "-n", "nobucket@%h", "-l", "warning",
                  "--without-mingle", "--without-gossip"], s3_server.env(bucket="no-such-bucket"))
    assert done.returncode == 78, done.stderr[-2000:]
    assert "the bucket 'no-such-bucket' does not exist" in done.stderr and "This worker does not start" in done.stderr


def test_refused_credentials_are_named():
    """moto's server with its authentication on (its own server: that switch is for the whole server)."""
    from tests.s3server import running

    with running() as server:
        server.enforce_auth()
        env = {**server.env(), "AWS_ACCESS_KEY_ID": "AKIAWRONGWRONGWRONG0", "AWS_SECRET_ACCESS_KEY": "wrong"}
        done = start(WEB, env)
    last = done.stderr.strip().splitlines()[-1]
    assert done.returncode != 0 and "the credentials were refused" in last and "ARTIFACT_STORE=s3://artifacts" in last, last
    assert "wrong" not in last.replace("wrong-", "")  # (the secret is not echoed)
