"""`manage.py copy_store SOURCE DEST`: a folder written before manifests existed into a bucket on
a real S3 server (tests/s3server.py), the bucket into another folder; resumed, and repaired."""
# ruff: noqa: F811 - the tests take the fixture s3_server imported below
import hashlib
import io
import json
import os

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from designer.engine.s3store import S3Store
from designer.engine.store import MANIFESTS, LocalStore
from designer.pipelines.management.commands import copy_store as command
from tests.s3server import s3_server  # noqa: F401 - a fixture

pytestmark = pytest.mark.timeout(120)


def write(root, files: dict[str, bytes]):
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)


def old_folder(root):
    """An ARTIFACT_ROOT as the embedded app left it before manifests: node outputs, logs, a dataset
    upload, an index naming another output's images by absolute path; and one tree with its manifest."""
    write(root, {
        "1/images/out/_meta.yaml": b"type: ImageDirectory\n",
        "1/images/out/cat/1.png": os.urandom(5000),
        "1/images/out/cat/2.png": os.urandom(7000),
        "1/images/logs/driver.log": b"started\nfinished\n",
        "1/split/left/_meta.yaml": b"type: ImageDirectory\n",
        "1/split/left/index.csv": f"path,label\n{root}/1/images/out/cat/1.png,cat\n".encode(),
        "datasets/3/20261129-upload/iris.csv": b"a,b\n1,2\n",
        "models/3/4/1/model.onnx": os.urandom(3000),
        "1/images/out/.x.incoming-12-34": b"half written",
    })
    LocalStore(root).upload_tree("2/train/model", _folder(root.parent / "model", {"_meta.yaml": b"type: Model\n",
                                                                                  "weights.pt": os.urandom(9000)}))
    return root


def _folder(path, files):
    write(path, files)
    return path


def copy(source, dest, *args):
    out, err = io.StringIO(), io.StringIO()
    call_command("copy_store", str(source), str(dest), *args, stdout=out, stderr=err)
    return out.getvalue() + err.getvalue()


def sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def files_of(root):
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_folder_goes_into_a_bucket_and_out_into_another_folder(s3_server, tmp_path, settings):
    source = old_folder(tmp_path / "artifacts")
    url = s3_server.store_url(s3_server.new_prefix())
    settings.ARTIFACT_STORE_ENDPOINT_URL = s3_server.url
    said = copy(source, url)
    # 10 files (not the one half written), the one manifest there, 3 written: 2 outputs and 1 upload
    sizes = sum(p.stat().st_size for p in source.rglob("*") if p.is_file() and ".incoming-" not in p.name)
    bucket = S3Store(url, s3_server.url)
    written = sum(n for k, n in bucket.walk() if k.startswith(MANIFESTS)) - (source / MANIFESTS / "2/train/model.json").stat().st_size
    assert f"copied 14 object(s) ({sizes + written} bytes), 3 of them manifests written for trees kept before " \
           "manifests existed; skipped 0 already there (0 bytes); 0 failed" in said, said

    images = bucket.manifest("1/images/out")
    assert images.files["cat/2.png"] == {"size": 7000, "sha256": sha(source / "1/images/out/cat/2.png")}
    assert set(images.files) == {"_meta.yaml", "cat/1.png", "cat/2.png"} and images.refs == []
    assert bucket.manifest("1/split/left").refs == ["1/images/out"]  # its index names the images
    assert set(bucket.manifest("datasets/3/20261129-upload").files) == {"iris.csv"}
    assert bucket.manifest("2/train/model").to_json() == (source / MANIFESTS / "2/train/model.json").read_bytes()
    assert bucket.manifest("1/images/logs") is None and bucket.size("1/images/out/.x.incoming-12-34") is None

    again = copy(source, url, "--endpoint-url", s3_server.url)
    assert again.strip() == f"nothing to copy: all 14 object(s) ({sizes + written} bytes) are at the destination already, " \
                            "with the same size and SHA-256"

    out = tmp_path / "restored"
    assert "copied 14 object(s)" in copy(url, out)
    expected = {k: v for k, v in files_of(source).items() if ".incoming-" not in k}
    restored = files_of(out)
    assert {k: v for k, v in restored.items() if not k.startswith(MANIFESTS)} == \
           {k: v for k, v in expected.items() if not k.startswith(MANIFESTS)}
    assert sorted(k for k in restored if k.startswith(MANIFESTS)) == [
        f"{MANIFESTS}/1/images/out.json", f"{MANIFESTS}/1/split/left.json", f"{MANIFESTS}/2/train/model.json",
        f"{MANIFESTS}/datasets/3/20261129-upload.json"]
    assert LocalStore(out).manifest("1/images/out").files == images.files

    corrupted = out / "1/images/out/cat/1.png"
    corrupted.write_bytes(os.urandom(5000))  # the same size, other bytes
    (out / "1/images/logs/driver.log").unlink()
    said = copy(url, out)
    assert "copied 2 object(s) (5017 bytes); skipped 12 already there" in said, said
    assert corrupted.read_bytes() == (source / "1/images/out/cat/1.png").read_bytes()


def test_a_failed_object_is_named_its_tree_stays_invisible_and_the_command_fails(tmp_path):
    source = tmp_path / "artifacts"
    write(source, {"4/n/out/_meta.yaml": b"type: X\n", "4/n/out/bad\\name.csv": b"1", "5/n/out/_meta.yaml": b"type: X\n"})
    with pytest.raises(CommandError, match=r"^2 object\(s\) not copied \(listed above\)"):
        copy(source, tmp_path / "copy")
    dest = LocalStore(tmp_path / "copy")
    assert dest.manifest("5/n/out") is not None and (tmp_path / "copy" / MANIFESTS / "5/n/out.json").is_file()
    assert not (tmp_path / "copy" / MANIFESTS / "4/n/out.json").exists()  # (a folder reads as a tree without one)
    err = io.StringIO()
    with pytest.raises(CommandError):
        call_command("copy_store", str(source), str(tmp_path / "copy"), stdout=io.StringIO(), stderr=err)
    lines = err.getvalue().splitlines()
    assert lines[0].startswith("FAILED 4/n/out/bad\\name.csv: ") and "is not an artifact key" in lines[0]
    assert lines[1] == "FAILED _manifests/4/n/out.json: not written: a file of its tree failed (4/n/out/bad\\name.csv)"


def test_a_store_is_not_copied_into_itself_and_a_missing_source_is_named(tmp_path, s3_server):
    with pytest.raises(CommandError, match="one folder is"):
        copy(tmp_path, tmp_path / "inside")
    with pytest.raises(CommandError, match="one prefix is"):
        copy(s3_server.store_url("a"), s3_server.store_url("a/b"), "--endpoint-url", s3_server.url)
    with pytest.raises(CommandError, match=f"SOURCE {tmp_path}/none: no such folder"):
        copy(tmp_path / "none", tmp_path / "dest")
    with pytest.raises(CommandError, match="a folder must be an absolute path"):
        copy("relative/folder", tmp_path / "dest")
    with pytest.raises(CommandError, match="the bucket 'no-such-bucket' does not exist"):
        copy(tmp_path, "s3://no-such-bucket/x", "--endpoint-url", s3_server.url)


def test_the_manifests_of_a_bucket_come_after_the_files(s3_server, tmp_path):
    """A copy stopped half way leaves no tree at the destination whose files are missing: each
    manifest is put after every file of the source."""
    source = S3Store(s3_server.store_url(s3_server.new_prefix()), s3_server.url)
    for n in range(3):
        source.upload_tree(f"9/n{n}/out", _folder(tmp_path / f"o{n}", {"_meta.yaml": b"x", "a.bin": os.urandom(100)}))

    order = []

    class Recording(LocalStore):
        def put_object(self, key, path):
            order.append(key)
            super().put_object(key, path)

    tally = command.copy_store(source, Recording(tmp_path / "dest"), threads=4)
    assert (tally.copied, tally.failures) == (6, {})  # each tree's pack (its two small files), then the manifests
    kinds = [k.startswith(MANIFESTS) for k in order]
    assert kinds == [False] * 3 + [True] * 3
    assert json.loads((tmp_path / "dest" / MANIFESTS / "9/n1/out.json").read_bytes())["key"] == "9/n1/out"
    # a folder's readers read files: the packed ones are written out beside the packs
    assert tally.unpacked == 6 and (tmp_path / "dest" / "9/n1/out/_meta.yaml").read_bytes() == b"x"
    with LocalStore(tmp_path / "dest").open("9/n2/out/a.bin") as f:
        assert len(f.read()) == 100
    again = command.copy_store(source, LocalStore(tmp_path / "dest"), threads=4)
    assert (again.copied, again.skipped, again.unpacked, again.failures) == (0, 6, 0, {})
