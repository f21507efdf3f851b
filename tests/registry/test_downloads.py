"""Issue 31: downloads are read from disk a piece at a time under a real daphne (designer/pipelines/
downloads.py): three simultaneous downloads of a 64 MB model version grow the web process by a
few MB, not by the archive (Django reads a synchronous FileResponse whole under ASGI)."""
import http.client
import os
import shutil
import threading
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client

from designer.engine import statuses
from designer.pipelines.models import ModelVersion, RegisteredModel
from tests import servers
from tests.workers import worker_database_url

MB = 2**20
SIZE = 64 * MB


@pytest.fixture(scope="module")
def server(django_db_setup, django_db_blocker):
    s = servers.Daphne({**os.environ, "DATABASE_URL": worker_database_url(), "DEBUG": "true"}, name="daphne-downloads")
    s.wait_ready()
    yield s
    s.stop()


def memory_kb(pid: int, field: str) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith(field + ":")).split()[1])


def download(port: int, path: str, session: str, out: list, pause: float = 0.0) -> None:
    """GET `path`; `pause`: seconds between two MB read (a client on a slow line)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    conn.request("GET", path, headers={"Cookie": f"sessionid={session}"})
    r = conn.getresponse()
    size = 0
    while chunk := r.read(MB):
        size += len(chunk)
        time.sleep(pause)
    out.append((r.status, r.getheader("Content-Disposition"), size))
    conn.close()


def test_three_slow_downloads_of_a_64_mb_version_at_once_grow_the_web_process_by_a_few_mb(server, transactional_db, users):
    """The clients read slower than the disk: the web process sends each piece once the last is
    taken (designer/backpressure.py); before, daphne held what they had not read yet (169 MB seen)."""
    owner = users["owner"]
    registered = RegisteredModel.objects.create(owner=owner, name="big")
    folder = Path(settings.ARTIFACT_ROOT) / f"models/{owner.id}/{registered.id}/1"
    shutil.rmtree(folder, ignore_errors=True)  # a rolled-back test given the same ids may have left its files
    folder.mkdir(parents=True)
    (folder / "model.pt").write_bytes(os.urandom(SIZE))  # weights hardly compress
    (folder / "model.yaml").write_text("classes: [a, b]\n")
    ModelVersion.objects.create(model=registered, version=1, folder=folder.relative_to(settings.ARTIFACT_ROOT).as_posix(),
                                status=statuses.READY)
    client = Client()
    client.force_login(owner)
    session = client.cookies["sessionid"].value
    path = "/api/models/big/versions/1/download"
    first: list = []
    download(server.port, path, session, first)  # what a download imports is loaded before the baseline
    before = memory_kb(server.proc.pid, "VmRSS")
    out: list = []
    threads = [threading.Thread(target=download, args=(server.port, path, session, out, 0.02)) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    grew = (memory_kb(server.proc.pid, "VmHWM") - before) / 1024
    print(f"\n3 downloads of a {SIZE / MB:.0f} MB version at once: the web process grew by {grew:.0f} MB at its peak")
    assert len(out) == 3 and all(o == first[0] for o in out), (out, first)
    status, disposition, size = first[0]
    assert status == 200 and disposition == 'attachment; filename="big-1.tar.gz"' and size > SIZE
    # one archive in memory would be 64 MB, three 192 MB; paced by the clients, a few MB (the bound: 100)
    assert grew < 100, grew
