"""The module registry: one file of modules/ per module type, found without a second list; the
catalogue API generated from it; a kind declared twice refused."""
import pytest
import yaml

from modules import catalogue as module_catalogue
from sdk import component
from tests.conftest import ROOT

REAL_KINDS = {
    "apply_image_transformation", "convert_to_image_directory", "dataset", "densenet", "evaluate_model", "export_to_onnx",
    "init_image_transformation", "registered_model", "resnet", "score_image_model", "split_image_directory",
    "train_pytorch_model",
}
ISSUE_PORT_TYPES = {"UntrainedModelDirectory", "ModelDirectory", "ImageDirectory", "TransformationDirectory", "ScoredDataset",
                    "EvaluationResults", "UploadedFile"}


def test_every_file_of_modules_declares_a_module_type():
    files = {p.stem for p in (ROOT / "modules").glob("*.py") if not p.stem.startswith("_")} - {"base", "catalogue"}
    by_file: dict[str, set[str]] = {}
    for m in module_catalogue.load():
        by_file.setdefault(m.__module__.removeprefix("modules."), set()).add(m.kind)
    assert set(by_file) == files
    assert set().union(*by_file.values()) == REAL_KINDS


def test_the_catalogue_api_lists_every_module_kind_and_port_type(owner_client):
    modules = owner_client.get("/api/modules").json()["modules"]
    kinds = [m["kind"] for m in modules]
    assert REAL_KINDS <= set(kinds) and len(kinds) == len(set(kinds))
    port_types = {port["type"] for m in modules for port in m["inputs"] + m["outputs"]}
    assert ISSUE_PORT_TYPES <= port_types
    for m in modules:
        if m["kind"] in REAL_KINDS:
            assert m["label"] and m["category"] and isinstance(m["version"], int), m["kind"]
            for p in m["params"]:
                assert {"name", "label", "type", "default", "help"} <= set(p), (m["kind"], p)
                assert len(p["help"]) > 10, f"{m['label']}: parameter {p['label']!r} has no help text for the pane"
                if p["type"] in ("int", "float"):
                    assert {"min", "max"} <= set(p), (m["kind"], p)
                if p["type"] == "choice":
                    assert p["default"] in p["choices"], (m["kind"], p)


def write_package(root, name, files):
    package = root / name
    package.mkdir()
    (package / "__init__.py").write_text("")
    for stem, kind in files.items():
        (package / f"{stem}.py").write_text(
            "from sdk.declarations import Module\n\n\n"
            f"class {stem.title().replace('_', '')}(Module):\n"
            f"    kind = {kind!r}\n    label = {stem!r}\n    category = 'Tests'\n\n"
            "    def run(self, ctx):\n        pass\n")


def test_a_kind_declared_twice_is_refused_naming_both_files(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    write_package(tmp_path, "twice_pkg", {"first": "same_kind", "second": "same_kind"})
    with pytest.raises(TypeError, match=r"module kind 'same_kind' is declared twice: twice_pkg\.first and twice_pkg\.second"):
        module_catalogue.load(("twice_pkg",))


def test_an_extra_package_cannot_take_a_built_in_kind(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    write_package(tmp_path, "clash_pkg", {"my_resnet": "resnet"})
    with pytest.raises(TypeError, match=r"module kind 'resnet' is declared twice: modules\.resnet and clash_pkg\.my_resnet"):
        module_catalogue.load(("clash_pkg",))


def test_a_kind_declared_twice_stops_start_up(tmp_path):
    """`manage.py check` (run by migrate and runserver) refuses to start, naming both files."""
    import os
    import subprocess
    import sys

    write_package(tmp_path, "startup_pkg", {"my_resnet": "resnet"})
    env = {**os.environ, "DESIGNER_EXTRA_MODULES": "startup_pkg", "PYTHONPATH": str(tmp_path),
           "DESIGNER_DATA_DIR": str(tmp_path)}
    env.pop("DATABASE_URL", None)
    r = subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True, text=True)
    assert r.returncode != 0
    assert "module kind 'resnet' is declared twice: modules.resnet and startup_pkg.my_resnet" in r.stderr
    ok = subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, env={**env, "DESIGNER_EXTRA_MODULES": ""},
                        capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr


# --------------------------------------------------------------------------- component files


def write_component(folder, kind="tiny_script", version=1, label="Tiny script", **extra):
    folder.mkdir(parents=True)
    (folder / "run.py").write_text("print('hi')\n")
    doc = {"kind": kind, "label": label, "version": version, "command": "python run.py {outputs.out}",
           "outputs": {"out": "folder"}, **extra}
    (folder / "component.yaml").write_text(yaml.safe_dump(doc))
    return folder / "component.yaml"


def test_component_files_join_the_catalogue_and_every_version_is_kept(tmp_path):
    write_component(tmp_path / "comps" / "v1", version=1)
    write_component(tmp_path / "comps" / "nested" / "v3", version=3, label="Tiny script v3")
    catalogue = module_catalogue.load((), (tmp_path / "comps", tmp_path / "no such folder"))
    assert catalogue.versions("tiny_script") == [1, 3] and catalogue.versions("resnet") == [1]
    assert catalogue.get("tiny_script").label == "Tiny script v3"
    assert catalogue.get("tiny_script", 1).version == 1 and catalogue.get("tiny_script", 2) is None
    assert catalogue.for_node({"kind": "tiny_script", "version": 1}).label == "Tiny script"
    assert catalogue.for_node({"kind": "tiny_script"}).version == 3
    assert catalogue.for_node({"kind": "resnet", "version": 7}) is catalogue.get("resnet")  # one version: its own
    assert catalogue.get("tiny_script", True) is None and catalogue.get("nothing") is None
    listed = [m for m in catalogue if m.kind == "tiny_script"]
    assert [m.version for m in listed] == [3]  # the palette offers the latest
    described = next(d for d in catalogue.describe() if d["kind"] == "tiny_script")
    assert described["timeout_setting"] is True and described["category"] == "Custom components"
    assert described["component"]["origin"].endswith("nested/v3/component.yaml")
    assert described["component"]["digest"] == catalogue.get("tiny_script").code_digest() != ""
    assert catalogue.get("resnet").code_digest() == "" and "component" not in catalogue.get("resnet").describe()


def test_with_components_adds_versions_and_refuses_a_built_in_kind(tmp_path):
    base = module_catalogue.load((), (tmp_path / "missing",))
    write_component(tmp_path / "mine" / "a", version=2)
    write_component(tmp_path / "more" / "b", version=5)
    catalogue = base.with_components(module_catalogue.components_in([tmp_path / "mine"]))
    assert catalogue.versions("tiny_script") == [2] and "tiny_script" not in base
    more = catalogue.with_components(module_catalogue.components_in([tmp_path / "more"]))
    assert more.versions("tiny_script") == [2, 5] and catalogue.versions("tiny_script") == [2]
    write_component(tmp_path / "clash" / "c", kind="resnet")
    with pytest.raises(TypeError, match=r"module kind 'resnet' is declared twice: modules\.resnet and "
                                        r".*clash/c/component\.yaml \(version 1\)"):
        base.with_components(module_catalogue.components_in([tmp_path / "clash"]))
    write_component(tmp_path / "again" / "d", version=2)
    with pytest.raises(TypeError, match=r"module kind 'tiny_script' is declared twice: .*mine/a/component\.yaml "
                                        r"\(version 2\) and .*again/d/component\.yaml \(version 2\)"):
        catalogue.with_components(module_catalogue.components_in([tmp_path / "again"]))


def test_a_bad_component_file_stops_loading_naming_it(tmp_path):
    path = write_component(tmp_path / "bad" / "x", version="two")
    with pytest.raises(component.ComponentError, match=rf"{path}: version: expected a whole number from 1 to 2,147,483,647, got 'two'"):
        module_catalogue.load((), (tmp_path / "bad",))
