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
