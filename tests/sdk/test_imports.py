"""The SDK imports nothing of the project, nor Django, nor torch: module authors read it alone."""
import subprocess
import sys

from tests.conftest import ROOT

SDK = ["sdk", "sdk.layout", "sdk.declarations", "sdk.errors", "sdk.context", "sdk.formats.meta",
       "sdk.formats.image_directory", "sdk.formats.transformation", "sdk.formats.untrained_model", "sdk.formats.model",
       "sdk.formats.scored_dataset", "sdk.formats.evaluation", "sdk.formats.metrics",
       "sdk.script", "sdk.component", "sdk.component_fields"]


def test_the_sdk_imports_nothing_of_the_project_nor_django_nor_torch():
    code = (f"import importlib, sys; [importlib.import_module(m) for m in {SDK!r}]; "
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
            "('designer', 'modules', 'training', 'django', 'torch', 'torchvision', 'pandas')); print(bad)")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_the_sdk_builds_as_a_package_of_its_own_holding_every_file(tmp_path):
    """Issue 28: sdk/pyproject.toml makes it installable (make deps installs it in place); a wheel of
    it holds every Python file of sdk/ (a new subpackage forgotten in `packages` would be missing)."""
    import shutil
    import zipfile

    source = shutil.copytree(ROOT / "sdk", tmp_path / "sdk", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path),
                    str(source)], cwd=tmp_path, check=True, capture_output=True, timeout=300)  # builds in the copy
    [wheel] = tmp_path.glob("pipeline_designer_sdk-*.whl")
    held = {name for name in zipfile.ZipFile(wheel).namelist() if name.endswith(".py")}
    assert held == {f"sdk/{p.relative_to(ROOT / 'sdk').as_posix()}" for p in (ROOT / "sdk").rglob("*.py")}
