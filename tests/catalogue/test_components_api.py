"""Uploading components (designer/pipelines/catalogue/components.py, components_api.py): the permission,
an archive (zip, tar.gz), a folder's files with their paths, a component.yaml alone; versions kept
side by side; every kind of bad upload refused by name with nothing left on disk or in the
database; a stranger sees none of it."""
from __future__ import annotations

import io
import shutil
import stat
import tarfile
import zipfile
from pathlib import Path

import pytest
import yaml
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile

from designer import limits
from designer.engine import paths
from designer.pipelines.models import Component
from tests.conftest import may_add_components

pytestmark = pytest.mark.django_db

TRAIN_PY = b"import sys\nprint('training', sys.argv)\n"


def spec(version=1, **changes) -> dict:
    d = {
        "kind": "my_train", "label": "My Train", "category": "My components", "version": version,
        "description": "trains a thing",
        "command": "python train.py --data {inputs.data} --epochs {params.epochs} --out {outputs.model}",
        "inputs": {"data": {"type": "ImageDirectory", "label": "Data"}},
        "outputs": {"model": {"type": "ModelDirectory", "label": "Model"}},
        "params": {"epochs": {"type": "int", "default": 2, "min": 1, "help": "how many"}},
    }
    d.update(changes)
    return d


def folder(version=1, top="my_train", **changes) -> dict[str, bytes]:
    """The files of a component folder: {path in the upload: bytes}."""
    prefix = f"{top}/" if top else ""
    return {f"{prefix}component.yaml": yaml.safe_dump(spec(version, **changes)).encode(),
            f"{prefix}train.py": TRAIN_PY, f"{prefix}lib/util.py": b"X = 1\n"}


def zipped(files: dict[str, bytes], name="my_train.zip", links=()) -> SimpleUploadedFile:
    """A zip of the files, plus symbolic links `links` ((name, target) as Info-ZIP stores them)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in files.items():
            z.writestr(path, data)
        for path, target in links:
            info = zipfile.ZipInfo(path)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            z.writestr(info, target)
    return SimpleUploadedFile(name, buffer.getvalue())


def tarred(files: dict[str, bytes], name="my_train.tar.gz", extra=()) -> SimpleUploadedFile:
    """A tar archive of the files, plus `extra` members (TarInfo: links, devices...)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz" if name.endswith(("gz", "tgz")) else "w") as t:
        for path, data in files.items():
            info = tarfile.TarInfo(path)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
        for info in extra:
            t.addfile(info)
    return SimpleUploadedFile(name, buffer.getvalue())


def member(name, kind, linkname="") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, linkname
    return info


def upload(client, *files: SimpleUploadedFile, paths_=None):
    data = {"file": files[0]} if len(files) == 1 and paths_ is None else {"files": list(files)}
    if paths_ is not None:
        data["paths"] = paths_
    return client.post("/api/components", data)


def folder_upload(client, files: dict[str, bytes]):
    uploads = [SimpleUploadedFile(Path(p).name, data) for p, data in files.items()]
    return upload(client, *uploads, paths_=list(files))


@pytest.fixture(autouse=True)
def _no_folders_of_earlier_tests(users):
    """Rolled-back tests give their user ids again; the files of their components stay on disk."""
    for user in users.values():
        shutil.rmtree(owner_folder(user), ignore_errors=True)
    yield
    for user in users.values():
        shutil.rmtree(owner_folder(user), ignore_errors=True)


@pytest.fixture
def allowed(users):
    """owner may add components (the permission an administrator grants in the admin)."""
    return may_add_components(users["owner"])


def owner_folder(user) -> Path:
    return Path(settings.ARTIFACT_ROOT) / paths.COMPONENTS_DIR / str(user.id)


def left_on_disk(user) -> list[str]:
    d = owner_folder(user)
    return sorted(p.name for p in d.iterdir()) if d.exists() else []


def test_a_user_without_the_permission_cannot_upload(client, users):
    client.force_login(users["collaborator"])
    r = upload(client, zipped(folder()))
    assert r.status_code == 403
    assert r.json()["error"] == ("adding components needs the permission 'Can add component' (granted by an administrator "
                                 "in the admin): a component's command runs on the workers")
    assert not Component.objects.exists() and left_on_disk(users["collaborator"]) == []
    assert client.get("/api/components").json()["can_add"] is False


def test_an_owner_uploads_a_zip_then_a_tar_gz_and_both_versions_are_kept(owner_client, allowed):
    r = upload(owner_client, zipped(folder(1)))
    assert r.status_code == 201, r.json()
    v1 = r.json()
    assert (v1["kind"], v1["version"], v1["label"], v1["category"]) == ("my_train", 1, "My Train", "My components")
    assert v1["command"].startswith("python train.py --data {inputs.data}") and v1["file"] == "my_train/component.yaml"
    assert v1["inputs"] == [{"name": "data", "label": "Data", "type": "ImageDirectory", "optional": False}]
    assert v1["outputs"][0]["type"] == "ModelDirectory" and v1["params"][0]["name"] == "epochs"
    assert v1["params"][0]["default"] == 2 and len(v1["digest"]) == 64

    r = upload(owner_client, tarred(folder(2, description="second")))
    assert r.status_code == 201, r.json()
    listed = owner_client.get("/api/components").json()
    assert listed["can_add"] is True and listed["max_upload_bytes"] == settings.COMPONENT_MAX_UPLOAD_BYTES
    [kind] = listed["components"]
    assert (kind["kind"], kind["latest_version"]) == ("my_train", 2)
    assert [v["version"] for v in kind["versions"]] == [2, 1] and kind["versions"][0]["description"] == "second"
    assert [v["version"] for v in owner_client.get("/api/components/my_train").json()["versions"]] == [2, 1]

    for row in Component.objects.filter(owner=allowed):
        where = paths.component_dir(settings.ARTIFACT_ROOT, allowed.id, row.id)
        assert row.folder == f"components/{allowed.id}/{row.id}"
        assert (where / "my_train" / "train.py").read_bytes() == TRAIN_PY and (where / "my_train/lib/util.py").is_file()
    assert left_on_disk(allowed) == sorted(str(row.id) for row in Component.objects.all())  # no staging folder left


def test_the_files_of_a_folder_and_a_component_yaml_alone_upload_too(owner_client, allowed):
    r = folder_upload(owner_client, folder(1))
    assert r.status_code == 201, r.json()
    row = Component.objects.get(kind="my_train", version=1)
    where = paths.component_dir(settings.ARTIFACT_ROOT, allowed.id, row.id)
    assert sorted(p.relative_to(where).as_posix() for p in where.rglob("*") if p.is_file()) == [
        "my_train/component.yaml", "my_train/lib/util.py", "my_train/train.py"]

    alone = yaml.safe_dump(spec(1, kind="echo_it", label="Echo it", command="echo {params.epochs} > {outputs.model}/x"))
    r = upload(owner_client, SimpleUploadedFile("component.yaml", alone.encode()))
    assert r.status_code == 201, r.json()
    assert r.json()["file"] == "component.yaml" and r.json()["kind"] == "echo_it"


def test_an_azure_ml_v2_component_folder_uploads_unchanged_its_scalar_inputs_the_nodes_parameters(owner_client, allowed):
    """azureml-examples' cli/assets/component/train.yml and its code folder, as Azure ML's CLI takes them (issue 43)."""
    samples = Path(__file__).resolve().parents[1] / "sdk" / "azure_v2"
    files = {"assets/train.yml": (samples / "train.yml").read_bytes(),
             "assets/train_src/train.py": (samples / "train_src" / "train.py").read_bytes()}
    r = folder_upload(owner_client, files)
    assert r.status_code == 201, r.json()
    got = r.json()
    assert (got["kind"], got["version"], got["label"], got["file"]) == ("train_data_component_cli", 9, "train_data",
                                                                         "assets/train.yml")
    assert [(p["name"], p["type"], p.get("default"), p.get("optional")) for p in got["params"]] == [
        ("max_epocs", "int", None, True), ("learning_rate", "float", 0.01, True), ("learning_rate_schedule", "str", "time-based", True)]
    assert [(p["name"], p["type"]) for p in got["inputs"]] == [("training_data", "AnyDirectory")]
    bad = {**files, "assets/train.yml": files["assets/train.yml"].replace(b"type: integer", b"type: mltable")}
    r = folder_upload(owner_client, bad)
    assert r.status_code == 400 and "assets/train.yml: inputs.max_epocs.type: mltable: not supported" in r.json()["error"]


def test_a_version_the_owner_has_is_refused(owner_client, allowed):
    assert upload(owner_client, zipped(folder(1))).status_code == 201
    r = upload(owner_client, tarred(folder(1)))
    assert r.status_code == 400
    assert r.json()["error"] == "version 1 of my_train exists: raise `version` in component.yaml"
    assert Component.objects.count() == 1 and len(left_on_disk(allowed)) == 1


def bad_field() -> dict[str, bytes]:
    return folder(params={"epochs": {"type": "int", "default": "many"}})


BAD_UPLOADS = {
    "no component file": (lambda: zipped({"my_train/train.py": TRAIN_PY}), 400, "my_train.zip holds no component.yaml"),
    "two component files": (lambda: zipped({**folder(top="a"), **folder(top="b")}), 400,
                            "my_train.zip holds 2 component.yaml files (a/component.yaml, b/component.yaml): upload one"),
    "a bad field": (lambda: zipped(bad_field()), 400, "my_train/component.yaml: params.epochs.default: "),
    "two bad fields": (lambda: zipped(folder(version=0, command="python train.py {inputs.nope}")), 400,
                       ("my_train/component.yaml: version: ", "\nmy_train/component.yaml: command: {inputs.nope}")),
    "not YAML": (lambda: zipped({"c/component.yaml": b"kind: [unclosed\n"}), 400, "c/component.yaml: "),
    "a member leading out": (lambda: tarred({**folder(), "../evil.py": b"x"}), 400,
                             "my_train.tar.gz: member '../evil.py' leads outside the component's folder"),
    "a member leading out of a zip": (lambda: zipped({**folder(), "my_train/../../evil.py": b"x"}), 400, "leads outside"),
    "an absolute member": (lambda: tarred({**folder(), "/etc/evil": b"x"}), 400,
                           "my_train.tar.gz: member '/etc/evil' has an absolute path"),
    "a symbolic link": (lambda: tarred(folder(), extra=[member("my_train/data", tarfile.SYMTYPE, "/etc")]), 400,
                        "my_train.tar.gz: member 'my_train/data' is a symbolic link (to '/etc'): links are refused"),
    "a symbolic link in a zip": (lambda: zipped(folder(), links=[("my_train/secrets", "/etc/passwd")]), 400,
                                 "my_train.zip: member 'my_train/secrets' is a symbolic link: links are refused"),
    "a hard link": (lambda: tarred(folder(), extra=[member("my_train/p", tarfile.LNKTYPE, "/etc/passwd")]), 400,
                    "member 'my_train/p' is a hard link"),
    "a device": (lambda: tarred(folder(), name="my_train.tar", extra=[member("my_train/tty", tarfile.CHRTYPE)]), 400,
                 "member 'my_train/tty' is not a regular file"),
    "a path given twice": (lambda: tarred(folder(), extra=[member("my_train/train.py", tarfile.REGTYPE)]), 400,
                           "'my_train/train.py' appears twice"),
    "a built-in kind": (lambda: zipped(folder(kind="dataset")), 400,
                        "my_train/component.yaml: kind: 'dataset' is the kind of a built-in module (Dataset): choose another kind"),
    "a kind of the settings folders": (lambda: zipped(folder(kind="pytorch_train")), 400,
                                       "'pytorch_train' is the kind of a component of the settings folders"),
    "a zip of thousands of entries": (lambda: zipped({**folder(), **{f"__MACOSX/{i}": b"" for i in range(4001)}}), 400,
                                      "my_train.zip holds more than 4,000 entries (files and folders): a component is its"),
    "a tar of thousands of folders": (lambda: tarred(folder(), extra=[member(f"my_train/d{i}", tarfile.DIRTYPE) for i in range(4001)]),
                                      400, "my_train.tar.gz holds more than 4,000 entries (files and folders)"),
    "not an archive": (lambda: SimpleUploadedFile("notes.txt", b"hello"), 400, "notes.txt is neither an archive"),
    "a broken zip": (lambda: SimpleUploadedFile("my_train.zip", b"PK not really"), 400,
                     "my_train.zip is named like a zip archive but is not one"),
    "a broken tar.gz": (lambda: SimpleUploadedFile("my_train.tgz", b"\x1f\x8b nope"), 400, "my_train.tgz"),
}


@pytest.mark.parametrize("case", list(BAD_UPLOADS))
def test_every_kind_of_bad_upload_is_refused_by_name_and_leaves_nothing(owner_client, allowed, case):
    make, status, error = BAD_UPLOADS[case]
    r = upload(owner_client, make())
    assert r.status_code == status and r["Content-Type"] == "application/json"
    message = r.json()["error"]
    assert all(e in message for e in ((error,) if isinstance(error, str) else error)), message
    assert str(settings.ARTIFACT_ROOT) not in message and "/components/" not in message  # never the server's folder
    assert not Component.objects.exists() and left_on_disk(allowed) == []


def test_an_upload_larger_than_the_limit_is_refused_packed_or_unpacked(owner_client, allowed, settings):
    settings.COMPONENT_MAX_UPLOAD_BYTES = 1024 * 1024
    big = zipped({**folder(), "my_train/weights.bin": b"\0" * (2 * 1024 * 1024)})  # a few KB packed
    assert big.size < settings.COMPONENT_MAX_UPLOAD_BYTES
    r = upload(owner_client, big)
    assert r.status_code == 413
    assert r.json()["error"] == "my_train.zip is larger than the limit of 1.0 MB once unpacked (setting COMPONENT_MAX_UPLOAD_MB)"
    r = upload(owner_client, SimpleUploadedFile("huge.tar", b"x" * (settings.COMPONENT_MAX_UPLOAD_BYTES + 1)))
    assert r.status_code == 413 and "(setting COMPONENT_MAX_UPLOAD_MB)" in r.json()["error"]
    r = folder_upload(owner_client, {**folder(), "my_train/a.bin": b"a" * 600_000, "my_train/b.bin": b"b" * 600_000})
    assert r.status_code == 413
    assert not Component.objects.exists() and left_on_disk(allowed) == []


def test_the_request_limit_of_the_upload_path_is_the_component_limit():
    limit, shown, setting, _ = limits.body_limit(limits.COMPONENT_UPLOAD_PATH)
    assert shown == settings.COMPONENT_MAX_UPLOAD_BYTES and setting == "COMPONENT_MAX_UPLOAD_MB" and limit > shown


def test_a_stranger_sees_none_of_them(owner_client, stranger_client, allowed):
    assert upload(owner_client, zipped(folder(1))).status_code == 201
    assert stranger_client.get("/api/components").json()["components"] == []
    for url in ("/api/components/my_train", "/api/components/my_train/versions/1"):
        r = stranger_client.get(url)
        assert r.status_code == 404 and r.json()["error"] == "you have no component 'my_train'", url
    assert stranger_client.delete("/api/components/my_train/versions/1").status_code == 404
    assert Component.objects.count() == 1
    assert "my_train" not in stranger_client.get("/components/").content.decode()


def test_an_owner_deletes_a_version_and_keeps_the_others(owner_client, allowed):
    for version in (1, 2):
        assert upload(owner_client, zipped(folder(version))).status_code == 201
    first = Component.objects.get(version=1)
    where = paths.component_dir(settings.ARTIFACT_ROOT, allowed.id, first.id)
    assert owner_client.delete("/api/components/my_train/versions/1").status_code == 204
    assert not where.exists() and list(Component.objects.values_list("version", flat=True)) == [2]
    r = owner_client.get("/api/components/my_train/versions/1")
    assert r.status_code == 404 and r.json()["error"] == "your component 'my_train' has no version 1"


def test_a_version_that_a_run_not_over_runs_is_kept_until_that_run_ends(owner_client, allowed):
    from designer.pipelines.models import NodeRun, Run

    for version in (1, 2):
        assert upload(owner_client, zipped(folder(version))).status_code == 201
    run = Run.objects.create(owner=allowed, name="trainer", status="running",
                             snapshot={"nodes": [{"id": "t", "kind": "my_train", "version": 1}]})
    node = NodeRun.objects.create(run=run, node_id="t", kind="my_train", status="queued")
    r = owner_client.delete("/api/components/my_train/versions/1")
    assert r.status_code == 409
    assert r.json()["error"] == (f"version 1 of my_train runs in run #{run.id} 'trainer' (running): "
                                 "delete the version once that run is over (or cancel it)")
    assert owner_client.delete("/api/components/my_train/versions/2").status_code == 204  # not the one it runs
    NodeRun.objects.filter(pk=node.pk).update(status="completed")
    assert owner_client.delete("/api/components/my_train/versions/1").status_code == 204
    assert not Component.objects.exists()


def test_the_page_offers_the_form_only_with_the_permission(client, owner_client, users, allowed):
    page = owner_client.get("/components/").content.decode()
    assert 'id="component-upload"' in page and "webkitdirectory" in page and 'id="no-permission"' not in page
    assert 'href="/components/"' in page  # the top navigation
    client.force_login(users["collaborator"])
    page = client.get("/components/").content.decode()
    assert 'id="component-upload"' not in page and "Can add component" in page and "administrator" in page


def test_signed_out_visitors_are_sent_to_sign_in(client):
    assert client.get("/api/components").status_code == 401
    r = client.get("/components/")
    assert r.status_code == 302 and "/accounts/login/" in r["Location"]


def test_an_administrator_grants_the_permission_from_the_users_list_and_sees_the_components(client, users):
    from django.contrib.auth import get_user_model

    admin = get_user_model().objects.create_user("admin", is_staff=True, is_superuser=True)
    client.force_login(admin)
    collaborator = users["collaborator"]
    page = client.get("/admin/auth/user/").content.decode()
    assert "May add components" in page and "allow_adding_components" in page
    r = client.post("/admin/auth/user/", {"action": "allow_adding_components", "_selected_action": [collaborator.id]})
    assert r.status_code == 302
    assert get_user_model().objects.get(pk=collaborator.id).has_perm("pipelines.add_component")
    page = client.get(f"/admin/auth/user/{collaborator.id}/change/").content.decode()
    assert "| Can add component<" in page  # Django's own permission, on the user's page

    client.force_login(collaborator)
    assert upload(client, zipped(folder())).status_code == 201
    client.force_login(admin)
    listed = client.get("/admin/pipelines/component/").content.decode()
    assert "my_train" in listed and "collaborator" in listed
    assert client.get("/admin/pipelines/component/add/").status_code == 403  # uploaded on the page, where it is checked

    r = client.post("/admin/auth/user/", {"action": "withdraw_adding_components", "_selected_action": [collaborator.id]})
    assert r.status_code == 302 and not get_user_model().objects.get(pk=collaborator.id).has_perm("pipelines.add_component")


def test_a_folder_of_more_files_than_one_request_may_send_is_refused_saying_to_send_an_archive(owner_client, allowed):
    many = {**folder(), **{f"my_train/data/{i}.txt": b"x" for i in range(settings.DATA_UPLOAD_MAX_NUMBER_FILES)}}
    r = folder_upload(owner_client, many)
    assert r.status_code == 400 and r["Content-Type"] == "application/json"
    assert r.json()["error"] == (f"more than {settings.DATA_UPLOAD_MAX_NUMBER_FILES} files in one request: "
                                 "upload an archive of the component's folder instead")
    assert upload(owner_client, zipped(many)).status_code == 201  # as an archive: fine
