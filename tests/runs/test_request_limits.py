"""Request bodies are refused from their headers, before they are read (designer/limits.py), by a
real daphne: a 300 MB anonymous POST is answered in under a second with nothing written, an
oversized upload of a signed-in user before its body is sent; a signed-in user's large body still
goes through. Raw sockets: the client sends the headers, then the body, and reads the answer as
soon as it comes."""
import http.client
import json
import os
import socket

import pytest
from django.test import Client

from designer.pipelines.accounts import tokens
from tests import servers
from tests.conftest import TEST_DATA
from tests.rawhttp import MB, complete, exchange, head
from tests.workers import worker_database_url

UPLOAD_LIMIT_MB = 4
REQUEST_LIMIT_MB = 2
PORTS = range(17210, 17300)


class Daphne(servers.Daphne):
    def __init__(self, tmp):
        self.tmp = tmp
        super().__init__({**os.environ, "DATABASE_URL": worker_database_url(), "DEBUG": "true", "TMPDIR": str(tmp),
                          "DATASET_MAX_UPLOAD_MB": str(UPLOAD_LIMIT_MB), "REQUEST_MAX_BODY_MB": str(REQUEST_LIMIT_MB)},
                         name="daphne-limits", ports=PORTS)
        self.wait_ready()

    def written(self) -> int:
        """Bytes the server process has written so far (files and sockets: /proc/<pid>/io wchar)."""
        with open(f"/proc/{self.proc.pid}/io") as f:
            io = dict(line.split(": ") for line in f.read().splitlines())
        return int(io["wchar"])



@pytest.fixture(scope="module")
def server(django_db_setup, django_db_blocker, tmp_path_factory):
    s = Daphne(tmp_path_factory.mktemp("daphne-tmp"))
    yield s
    s.stop()


@pytest.fixture
def session(transactional_db, users):
    c = Client()
    c.force_login(users["owner"])
    return c.cookies["sessionid"].value


def files_under(*roots):
    return sorted(str(p) for root in roots if root.exists() for p in root.rglob("*"))


def test_a_300_mb_anonymous_post_is_answered_at_once_and_nothing_is_written(server):
    artifacts = files_under(TEST_DATA / "artifacts")
    written = server.written()
    size = 300 * MB
    status, headers, body, sent, seconds = exchange(server.port, head("POST", "/api/datasets", {
        "Content-Type": "multipart/form-data; boundary=x", "Content-Length": size}), body_size=size)
    grew = server.written() - written
    print(f"\n300 MB anonymous POST: 413 after {seconds * 1000:.0f} ms (target: under 1 s), {sent / MB:.0f} MB sent "
          f"by then, the server wrote {grew / 1024:.1f} KB in all (files and sockets)")
    assert status == 413 and headers["content-type"] == "application/json" and headers["connection"] == "close"
    assert json.loads(body) == {"error": "sign in first: a request body of 300.0 MB from a visitor who is not signed in "
                                         "may be at most 64 KB (setting ANONYMOUS_MAX_BODY_KB)", "limit_bytes": 64 * 1024}
    assert seconds < 10.0  # (the figure is printed; what holds is that the body was not read)
    assert grew < 64 * 1024  # the answer and a log line: not a byte of the body
    assert files_under(server.tmp) == [] and files_under(TEST_DATA / "artifacts") == artifacts


def test_an_anonymous_body_of_no_declared_length_is_refused_at_once(server):
    status, _, body, sent, seconds = exchange(server.port, head("POST", "/accounts/login/", {
        "Transfer-Encoding": "chunked", "Content-Type": "application/x-www-form-urlencoded"}), body_size=50 * MB, chunked=True)
    assert status == 413 and body.decode().startswith("sign in first: a request body from a visitor who is not signed in")
    assert seconds < 10.0  # (the figure is printed; what holds is that the body was not read)


def test_a_small_anonymous_body_reaches_django(server):
    status, headers, body, *_ = exchange(server.port, head("POST", "/api/validate", {
        "Content-Type": "application/json", "Content-Length": 2}) + b"{}")
    assert status == 403 and headers["content-type"] == "application/json"  # CSRF first, as JSON
    assert "CSRF" in json.loads(body)["error"]


def test_an_oversized_upload_of_a_signed_in_user_is_refused_from_its_length_before_its_body(server, session):
    size = UPLOAD_LIMIT_MB * MB + MB
    status, headers, body, sent, seconds = exchange(server.port, head("POST", "/api/datasets", {
        "Cookie": f"sessionid={session}", "Content-Type": "multipart/form-data; boundary=x",
        "Content-Length": size, "Expect": "100-continue"}))  # no body sent at all
    assert sent == 0 and status == 413 and seconds < 10.0
    assert json.loads(body) == {"error": f"the upload is 5.0 MB, larger than the limit of {UPLOAD_LIMIT_MB}.0 MB "
                                         "(setting DATASET_MAX_UPLOAD_MB)", "limit_bytes": UPLOAD_LIMIT_MB * MB}


def test_a_client_that_sends_its_whole_body_first_still_reads_the_413(server, session):
    """What a browser does: write the body, then read (the server reads on, dropping it, meanwhile)."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=20)
    conn.request("POST", "/api/datasets", body=b"x" * (UPLOAD_LIMIT_MB + 1) * MB,
                 headers={"Cookie": f"sessionid={session}", "Content-Type": "multipart/form-data; boundary=x"})
    r = conn.getresponse()
    assert r.status == 413 and json.loads(r.read())["error"].startswith("the upload is 5.0 MB, larger than the limit")
    conn.close()


@pytest.mark.parametrize("expect_continue", [True, False])
def test_a_signed_in_users_large_body_goes_through_after_its_session_is_checked(server, session, expect_continue):
    pipeline = {"schema_version": 1, "nodes": [], "links": [], "layout": {}, "name": "x" * (300 * 1024)}
    body = json.dumps(pipeline).encode()
    headers = {"Cookie": f"sessionid={session}; csrftoken={'a' * 32}", "X-CSRFToken": "a" * 32,
               "Content-Type": "application/json", "Content-Length": len(body)}
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=20)
    with sock:
        if expect_continue:
            sock.sendall(head("POST", "/api/validate", {**headers, "Expect": "100-continue"}))
            assert sock.recv(100) == b"HTTP/1.1 100 Continue\r\n\r\n"  # once the session was found good
            sock.sendall(body)
        else:
            sock.sendall(head("POST", "/api/validate", headers) + body)
        answer = b""
        while not complete(answer):
            answer += sock.recv(65536)
    assert answer.startswith(b"HTTP/1.1 200 ")
    problems = json.loads(answer.partition(b"\r\n\r\n")[2])["problems"]  # the whole body was read: its name is too long
    assert [p["message"][:8] + p["message"][-12:] for p in problems] == ["name: 'x is too long"]


def test_a_session_that_is_not_valid_counts_as_not_signed_in(server, session):
    status, _, body, _, seconds = exchange(server.port, head("POST", "/api/validate", {
        "Cookie": "sessionid=not-a-session", "Content-Type": "application/json", "Content-Length": MB}),
        body_size=MB)
    assert status == 413 and json.loads(body)["error"].startswith("sign in first: a request body of 1.0 MB")
    assert seconds < 10.0  # (at once: the body is not read)


def test_a_body_of_no_declared_length_is_counted_while_it_streams(server, session):
    status, _, body, sent, _ = exchange(server.port, head("POST", "/api/validate", {
        "Cookie": f"sessionid={session}", "Transfer-Encoding": "chunked", "Content-Type": "application/json"}),
        body_size=40 * MB, chunked=True)
    assert status == 413
    assert json.loads(body) == {"error": f"the request body is larger than the limit of {REQUEST_LIMIT_MB}.0 MB "
                                         "(setting REQUEST_MAX_BODY_MB)", "limit_bytes": REQUEST_LIMIT_MB * MB}
    assert sent < 40 * MB


def test_a_script_with_an_api_token_sends_a_large_body_without_a_session(server, transactional_db, users):
    """A script's personal API token counts as signing in (designer/token_auth.py lets it through
    Django): a dataset upload over ANONYMOUS_MAX_BODY_KB goes through; a revoked token is refused."""
    token, secret = tokens.create(users["owner"], "script")
    body = json.dumps({"schema_version": 2, "nodes": [], "links": [], "name": "x" * (300 * 1024)}).encode()
    headers = {"Authorization": f"Bearer {secret}", "Content-Type": "application/json", "Content-Length": len(body)}
    status, _, answer, *_ = exchange(server.port, head("POST", "/api/validate", headers) + body)
    assert status == 200 and json.loads(answer)["valid"] is False  # read whole: its name is too long
    tokens.revoke(users["owner"], token.id)
    status, _, answer, *_ = exchange(server.port, head("POST", "/api/validate", headers), body_size=len(body))
    assert status == 413 and json.loads(answer)["error"].startswith("sign in first")


def test_a_signed_in_user_who_is_not_staff_has_the_anonymous_limit_under_admin(server, session, users):
    """Issue 31: the admin's upload limit (DATASET_MAX_UPLOAD_MB) is staff's: a 300 MB body of a
    signed-in user who is not staff was written to disk before the admin's redirect."""
    written = server.written()
    status, headers, body, sent, seconds = exchange(server.port, head("POST", "/admin/pipelines/dataset/add/", {
        "Cookie": f"sessionid={session}", "Content-Type": "multipart/form-data; boundary=x",
        "Content-Length": 3 * MB}), body_size=3 * MB)  # under DATASET_MAX_UPLOAD_MB here
    grew = server.written() - written
    print(f"\nnon-staff 3 MB POST to /admin/: {status} after {seconds * 1000:.0f} ms, the server wrote {grew / 1024:.1f} KB")
    assert status == 413 and headers["connection"] == "close"
    assert body.decode() == ("a request body of 3.0 MB to /admin/ from a user who is not staff may be at most 64 KB "
                             "(setting ANONYMOUS_MAX_BODY_KB)\n")
    assert grew < 64 * 1024 and seconds < 10.0
    users["owner"].is_staff = True
    users["owner"].save()
    status, *_ = exchange(server.port, head("POST", "/admin/pipelines/dataset/add/", {
        "Cookie": f"sessionid={session}", "Content-Type": "multipart/form-data; boundary=x", "Content-Length": MB}),
        body_size=MB)
    assert status == 400  # read whole (Django finds the multipart body malformed): the limit let it through
