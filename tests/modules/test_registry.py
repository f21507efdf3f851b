"""The module registry: one file of modules/ per module type, found without a second list; the
catalogue API generated from it; a kind declared twice refused."""
import pytest

from modules import registry
from tests.conftest import ROOT

REAL_KINDS = {
    "apply_image_transformation", "convert_to_image_directory", "dataset", "densenet", "evaluate_model", "export_to_onnx",
    "init_image_transformation", "registered_model", "resnet", "score_image_model", "split_image_directory",
    "train_pytorch_model",
}
ISSUE_PORT_TYPES = {"UntrainedModelDirectory", "ModelDirectory", "ImageDirectory", "TransformationDirectory", "ScoredDataset",
                    "EvaluationResults", "UploadedFile"}


def test_every_file_of_modules_declares_a_module_type():
    files = {p.stem for p in (ROOT / "modules").glob("*.py") if not p.stem.startswith("_")} - {"base", "registry"}
    by_file: dict[str, set[str]] = {}
    for m in registry.load():
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
        registry.load(("twice_pkg",))


def test_an_extra_package_cannot_take_a_built_in_kind(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    write_package(tmp_path, "clash_pkg", {"my_resnet": "resnet"})
    with pytest.raises(TypeError, match=r"module kind 'resnet' is declared twice: modules\.resnet and clash_pkg\.my_resnet"):
        registry.load(("clash_pkg",))


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
