"""The artifact store (designer/engine/store.py): a folder and an S3 bucket on real S3 servers
(moto's, and SeaweedFS's single binary, disk-backed as deployments run it, each in a process of
its own on the loopback: tests/s3server.py), spoken to through boto3 over HTTP. No mock of the client."""
# ruff: noqa: F811 - the tests take the fixture s3_server imported below
import hashlib
import os
import socket
import urllib.request
from pathlib import Path

import pytest

from designer.engine.s3store import S3Store
from designer.engine.store import CHUNK, MANIFESTS, LocalStore, Manifest, NotInStore, StoreError
from tests.s3server import S3Server, s3_server, seaweedfs  # noqa: F401 - fixtures

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(params=["folder", "bucket", "seaweedfs"])
def store(request, tmp_path):
    if request.param == "folder":
        return LocalStore(tmp_path / "store")
    server = request.getfixturevalue("s3_server" if request.param == "bucket" else "seaweedfs")
    return S3Store(server.store_url(server.new_prefix()), server.url)


@pytest.fixture(params=["moto", "seaweedfs"])
def server(request):
    """An S3 server: moto's, or SeaweedFS (disk-backed, as deployments run)."""
    return request.getfixturevalue("s3_server" if request.param == "moto" else "seaweedfs")


def make_folder(root, files: dict[str, bytes]):
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return root


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


FILES = {"_meta.yaml": b"type: DataFrameDirectory\n", "data.csv": b"a,b\n1,2\n" * 1000, "empty": b"",
         "sub/deeper/w\u00e4rme.bin": os.urandom(70_000)}


def test_a_tree_round_trips_with_its_sizes_and_sha256(store, tmp_path):
    folder = make_folder(tmp_path / "out", FILES)
    manifest = store.upload_tree("12/train/model", folder, refs=["11/split/left", "11/split/left", "10/a/b"])
    assert {rel: {"size": f["size"], "sha256": f["sha256"]} for rel, f in manifest.files.items()} == \
        {rel: {"size": len(d), "sha256": sha(d)} for rel, d in FILES.items()}
    assert manifest.refs == ["10/a/b", "11/split/left"]
    assert manifest.size == sum(len(d) for d in FILES.values())

    read = store.manifest("12/train/model")
    assert (read.key, read.files, read.refs) == ("12/train/model", manifest.files, manifest.refs)
    store.download_tree(read, tmp_path / "copy")
    for rel, data in FILES.items():
        assert (tmp_path / "copy" / rel).read_bytes() == data
    assert store.manifest("12/train/other") is None
    assert store.manifest("12/train") is None or isinstance(store, LocalStore)  # (a folder's parent is a folder)


def test_a_bucket_tree_whose_upload_was_killed_before_its_manifest_is_invisible(s3_server, tmp_path):
    class KilledBeforeTheManifest(S3Store):
        def _put(self, key, data):
            if key.startswith(f"{MANIFESTS}/"):
                raise KeyboardInterrupt  # the worker's end, between the files and the manifest
            super()._put(key, data)

    url = s3_server.store_url(s3_server.new_prefix())
    killed = KilledBeforeTheManifest(url, s3_server.url)
    with pytest.raises(KeyboardInterrupt):
        killed.upload_tree("3/n/out", make_folder(tmp_path / "out", FILES))
    reader = S3Store(url, s3_server.url)
    assert [k for k, _ in reader.walk()][0].startswith("_packs/3/n/out/")  # its files are there (in a pack)...
    assert reader.manifest("3/n/out") is None  # ...and no reader sees the tree
    with pytest.raises(NotInStore):
        reader.open("3/n/out/data.csv")
    reader.upload_tree("3/n/out", tmp_path / "out")  # the retry completes it
    assert reader.manifest("3/n/out").files.keys() == FILES.keys()


def test_a_folder_tree_half_copied_is_invisible(tmp_path):
    store = LocalStore(tmp_path / "store")
    half = make_folder(tmp_path / "store" / "3" / "n" / ".out.incoming-123-456", {"a.csv": b"1"})
    assert store.manifest("3/n/out") is None
    assert [k for k, _ in store.walk()] == []  # never an object either
    store.upload_tree("3/n/out", make_folder(tmp_path / "out", {"a.csv": b"12"}))
    assert store.read_bytes("3/n/out/a.csv", 10) == b"12" and half.exists()  # (a crashed copy is left alone)


def test_objects_are_read_whole_in_ranges_and_as_streams(store, tmp_path):
    data = os.urandom(3 * 1024 * 1024 + 17)
    path = tmp_path / "blob"
    path.write_bytes(data)
    store.put_file("5/n/logs/driver.log", path)
    store.put_bytes("5/n/logs/empty.log", b"")
    assert store.size("5/n/logs/driver.log") == len(data)
    assert store.size("5/n/logs/empty.log") == 0
    assert store.size("5/n/logs/none.log") is None and store.size("5/n/logs") is None
    assert store.read_range("5/n/logs/driver.log", 1000, 5000) == data[1000:6000]
    assert store.read_range("5/n/logs/driver.log", len(data) - 10, 100) == data[-10:]
    assert store.read_range("5/n/logs/driver.log", len(data), 100) == b""
    assert store.read_range("5/n/logs/empty.log", 0, 100) == b""
    assert store.read_bytes("5/n/logs/empty.log", 10) == b""
    with pytest.raises(StoreError, match="more than the 1000 read here"):
        store.read_bytes("5/n/logs/driver.log", 1000)
    with store.open("5/n/logs/driver.log") as f:
        pieces = list(iter(lambda: f.read(1024 * 1024), b""))
    assert len(pieces) == 4 and b"".join(pieces) == data
    for read in (lambda: store.open("5/n/logs/none.log"), lambda: store.read_range("5/n/logs/none.log", 0, 1),
                 lambda: store.read_bytes("5/n/logs/none.log", 1)):
        with pytest.raises(NotInStore):
            read()
    with pytest.raises(ValueError, match="not an artifact key"):
        store.put_bytes("5/../../etc/x", b"no")


def test_list_names_the_objects_below_a_folder_only(store):
    for key, data in {"7/a/logs/x.log": b"1", "7/a/logs/sub/y.log": b"22", "7/a/logsx/z.log": b"333",
                      "7/ab/logs/w.log": b"4"}.items():
        store.put_bytes(key, data)
    assert store.list("7/a/logs") == [("sub/y.log", 2), ("x.log", 1)]
    assert store.list("7/a/none") == []


def test_delete_prefix_removes_the_trees_below_it_and_their_manifests(store, tmp_path):
    folder = make_folder(tmp_path / "out", {"_meta.yaml": b"type: X\n", "a/b.txt": b"b"})
    for key in ("21/n1/out", "21/n2/out", "210/n1/out"):
        store.upload_tree(key, folder)
    store.put_bytes("21/n1/logs/driver.log", b"log")
    removed = store.delete_prefix("21")
    assert removed >= 5  # the files (and with a bucket, the manifests) below 21/
    assert store.manifest("21/n1/out") is None and store.manifest("21/n2/out") is None
    assert store.list("21") == [] and store.size("21/n1/logs/driver.log") is None
    assert store.manifest("210/n1/out").files.keys() == {"_meta.yaml", "a/b.txt"}  # (a name that starts alike)
    left = [k for k, _ in store.walk()]
    if isinstance(store, LocalStore):
        assert left == ["210/n1/out/_meta.yaml", "210/n1/out/a/b.txt", f"{MANIFESTS}/210/n1/out.json"]
    else:  # its two small files in a pack
        assert left[0] == f"{MANIFESTS}/210/n1/out.json" and left[1].startswith("_packs/210/n1/out/") and len(left) == 2
    assert store.delete_prefix("21") == 0


def test_walk_lists_every_object_with_the_manifests_and_copies_them_raw(store, tmp_path):
    folder = make_folder(tmp_path / "out", {"_meta.yaml": b"type: X\n"})
    manifest = store.upload_tree("4/n/out", folder)
    store.put_bytes("datasets/1/up/file.csv", b"x,y\n")
    files = [("4/n/out/_meta.yaml", 8)] if isinstance(store, LocalStore) else [
        (f"_packs/4/n/out/{manifest.files['_meta.yaml']['pack']}", 8)]  # (a bucket: the tree's small files in a pack)
    assert list(store.walk()) == sorted([*files, (f"{MANIFESTS}/4/n/out.json", len(manifest.to_json())),
                                         ("datasets/1/up/file.csv", 4)])
    assert store.sha256(f"{MANIFESTS}/4/n/out.json") == sha(manifest.to_json())
    store.get_object(f"{MANIFESTS}/4/n/out.json", tmp_path / "m.json")
    assert Manifest.from_json((tmp_path / "m.json").read_bytes()).files == manifest.files
    store.put_object(f"{MANIFESTS}/9/n/out.json", tmp_path / "m.json")  # a tree's manifest, as a copy writes it
    assert store.manifest("9/n/out").files == manifest.files
    with pytest.raises(NotInStore):
        store.get_object("4/n/none", tmp_path / "x")
    for bad in (f"{MANIFESTS}/../x.json", f"{MANIFESTS}/x", "a//b"):
        with pytest.raises(ValueError):
            store.put_object(bad, tmp_path / "m.json")


def test_a_presigned_url_downloads_the_object_under_its_file_name(s3_server):
    store = S3Store(s3_server.store_url(s3_server.new_prefix()), s3_server.url)
    store.put_bytes("1/n/out/scored.csv", b"a,b\n1,2\n")
    with urllib.request.urlopen(store.download_url("1/n/out/scored.csv", 'scored "x".csv'), timeout=10) as answer:
        assert answer.read() == b"a,b\n1,2\n"
        assert answer.headers["Content-Disposition"] == 'attachment; filename="scored x.csv"'
    assert LocalStore(Path("/nowhere")).download_url("1/n/out/scored.csv", "scored.csv") is None


def test_prefixes_of_one_bucket_are_stores_apart(s3_server):
    a = S3Store(s3_server.store_url(s3_server.new_prefix()), s3_server.url)
    b = S3Store(s3_server.store_url(s3_server.new_prefix()), s3_server.url)
    a.put_bytes("1/n/logs/a.log", b"a")
    assert list(b.walk()) == [] and b.size("1/n/logs/a.log") is None
    assert s3_server.client().head_object(Bucket="artifacts", Key=f"{a.prefix}/1/n/logs/a.log")["ContentLength"] == 1


def test_a_file_over_one_part_is_uploaded_in_parts_and_round_trips(s3_server, tmp_path):
    store = S3Store(s3_server.store_url(s3_server.new_prefix()), s3_server.url)
    big = os.urandom(2 * CHUNK + 123)
    folder = make_folder(tmp_path / "out", {"weights.pt": big, "_meta.yaml": b"type: Model\n"})
    manifest = store.upload_tree("6/train/model", folder)
    assert manifest.files["weights.pt"] == {"size": len(big), "sha256": sha(big)}
    etag = s3_server.client().head_object(Bucket="artifacts", Key=f"{store.prefix}/6/train/model/weights.pt")["ETag"]
    assert etag.strip('"').endswith("-3"), etag  # three parts: a multipart upload
    store.download_tree(store.manifest("6/train/model"), tmp_path / "copy")
    assert sha((tmp_path / "copy" / "weights.pt").read_bytes()) == sha(big)
    assert store.sha256("6/train/model/weights.pt") == sha(big)


def test_check_passes_on_a_bucket_that_can_be_written(s3_server):
    S3Store(s3_server.store_url("some/prefix"), s3_server.url).check()
    assert s3_server.client().list_objects_v2(Bucket="artifacts", Prefix="some/prefix/").get("KeyCount") == 0


def test_check_names_the_setting_and_the_bucket_when_the_bucket_does_not_exist(s3_server):
    with pytest.raises(StoreError) as e:
        S3Store("s3://no-such-bucket/runs", s3_server.url).check()
    assert str(e.value) == (f"ARTIFACT_STORE=s3://no-such-bucket/runs (bucket 'no-such-bucket' at {s3_server.url}): "
                            "check: the bucket 'no-such-bucket' does not exist (create it, or correct ARTIFACT_STORE)")


def test_a_refused_upload_or_download_is_the_stores_error_naming_the_bucket(s3_server, tmp_path):
    # boto3's transfers wrap the server's answer in their own exceptions: a worker's log syncing
    # and its outputs' upload wait on a StoreError, and would end on anything else
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "log.txt").write_text("a line")
    gone = S3Store("s3://no-such-bucket/runs", s3_server.url)
    for attempt in (lambda: gone.put_file("1/n/logs/log.txt", tmp_path / "tree" / "log.txt"),
                    lambda: gone.upload_tree("1/n/out", tmp_path / "tree"),
                    lambda: gone.get_object("1/n/logs/log.txt", tmp_path / "copy.txt")):
        with pytest.raises(StoreError, match="bucket 'no-such-bucket'"):
            attempt()


def test_check_names_the_setting_the_bucket_and_the_endpoint_when_nothing_answers():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{s.getsockname()[1]}"  # (bound, never listening: refused)
        with pytest.raises(StoreError) as e:
            S3Store("s3://artifacts/runs", closed).check()
        with pytest.raises(StoreError, match="the server cannot be reached") as away:
            S3Store("s3://artifacts/runs", closed).manifest("1/n/out")  # away is not "no such tree"
        assert not isinstance(away.value, NotInStore)
    assert str(e.value).startswith(f"ARTIFACT_STORE=s3://artifacts/runs (bucket 'artifacts' at {closed}): check: "
                                   f"the server cannot be reached (Could not connect to the endpoint URL: ")


def test_check_says_the_credentials_were_refused(monkeypatch):
    server = S3Server("guarded").start()
    try:
        key = server.enforce_auth()
        for name, value in key.items():
            monkeypatch.setenv(name, value)
        S3Store("s3://guarded/runs", server.url).check()  # the IAM user's key is let in
        for secret in ({"AWS_SECRET_ACCESS_KEY": "wrong"}, {"AWS_ACCESS_KEY_ID": "AKIANOSUCHKEY0000000"}):
            for name, value in secret.items():
                monkeypatch.setenv(name, value)
            with pytest.raises(StoreError) as e:
                S3Store("s3://guarded/runs", server.url).check()
            assert str(e.value).startswith(f"ARTIFACT_STORE=s3://guarded/runs (bucket 'guarded' at {server.url}): "
                                           "check: the credentials were refused (")
            assert "check AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and the bucket's policy" in str(e.value)
            monkeypatch.setenv("AWS_ACCESS_KEY_ID", key["AWS_ACCESS_KEY_ID"])
            monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", key["AWS_SECRET_ACCESS_KEY"])
    finally:
        server.stop()


def test_check_names_the_setting_when_a_folder_cannot_be_written(tmp_path):
    (tmp_path / "file").write_text("not a folder")
    with pytest.raises(StoreError, match=rf"^ARTIFACT_STORE={tmp_path}/file/artifacts: cannot write in this folder"):
        LocalStore(tmp_path / "file" / "artifacts").check()


def test_a_store_goes_on_after_its_server_restarts_empty(s3_server, tmp_path):
    """(Last in this file: the module's server loses everything.)"""
    store = S3Store(s3_server.store_url(s3_server.new_prefix()), s3_server.url)
    store.upload_tree("8/n/out", make_folder(tmp_path / "out", {"a": b"a"}))
    s3_server.restart()
    assert store.manifest("8/n/out") is None  # moto keeps nothing: the bucket is back, empty
    store.check()
    store.upload_tree("8/n/out", tmp_path / "out")
    assert store.manifest("8/n/out").files["a"]["size"] == 1


def test_a_buckets_small_files_travel_in_packs_and_are_read_one_at_a_time(server, tmp_path):
    """2,000 small files go up and down in one pack (one request each way, not 2,000); a large
    file stays an object of its own; each packed file is read alone by a ranged request: whole, a
    range, its size, a stream; a link is offered for a large file only (a link cannot ask for a
    range); a tree deleted and written again is read anew by a reader that read the old one."""
    files = {f"images/{i % 10}/{i:05d}.png": os.urandom(200 + i % 50) for i in range(2000)}
    files["weights.bin"] = os.urandom(2 * 1024 * 1024)
    url = server.store_url(server.new_prefix())
    store = S3Store(url, server.url)
    manifest = store.upload_tree("8/convert/out", make_folder(tmp_path / "out", files))
    objects = [k for k, _ in store.walk()]
    assert len(objects) == 3 and objects[0] == "8/convert/out/weights.bin" and objects[2].startswith("_packs/8/convert/out/")
    assert "pack" not in manifest.files["weights.bin"]

    store.download_tree(store.manifest("8/convert/out"), tmp_path / "copy")
    assert all((tmp_path / "copy" / rel).read_bytes() == data for rel, data in files.items())

    reader = S3Store(url, server.url)  # (another process: the web app)
    one = files["images/7/01237.png"]
    assert reader.read_bytes("8/convert/out/images/7/01237.png", 10_000) == one
    assert reader.size("8/convert/out/images/3/00003.png") == len(files["images/3/00003.png"])
    assert reader.read_range("8/convert/out/images/7/01237.png", 10, 20) == one[10:30]
    assert reader.read_range("8/convert/out/images/7/01237.png", len(one), 20) == b""
    with reader.open("8/convert/out/images/7/01237.png") as f:
        assert f.read() == one
    assert reader.download_url("8/convert/out/images/7/01237.png", "a.png") is None
    with urllib.request.urlopen(reader.download_url("8/convert/out/weights.bin", "w.bin")) as answer:
        assert answer.read() == files["weights.bin"]
    with pytest.raises(NotInStore):
        reader.open("8/convert/out/images/7/99999.png")

    store.delete_prefix("8/convert/out")
    with pytest.raises(NotInStore):
        reader.open("8/convert/out/images/7/01237.png")
    store.upload_tree("8/convert/out", make_folder(tmp_path / "again", {"images/7/01237.png": b"new bytes"}))
    assert reader.read_bytes("8/convert/out/images/7/01237.png", 100) == b"new bytes"
