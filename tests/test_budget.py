"""The time budget per test file (tests/budget.py): a file over its budget fails the run and is named."""
import os
import subprocess
import sys

from tests.conftest import ROOT


def run_pytest(tmp_path, scale: str) -> subprocess.CompletedProcess:
    (tmp_path / "conftest.py").write_text("from tests import budget\n\n\ndef pytest_configure(config):\n    budget.register(config)\n")
    (tmp_path / "test_slow.py").write_text("import time\n\n\ndef test_slow():\n    time.sleep(0.5)\n\n\ndef test_quick():\n    pass\n")
    (tmp_path / "test_quick.py").write_text("def test_quick():\n    pass\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TEST_BUDGET_SCALE": scale,
           "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}  # this suite's plugins (Django and others) are not needed
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-c", os.devnull,
                           "--rootdir", str(tmp_path), str(tmp_path)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


def test_a_test_file_over_its_time_budget_fails_the_run_naming_the_file_its_time_and_its_budget(tmp_path):
    r = run_pytest(tmp_path, "0.001")  # a budget of 0.24 s for each file
    assert r.returncode == 1, r.stdout + r.stderr
    assert "3 passed" in r.stdout
    assert "OVER BUDGET: test_slow.py took 1 s, its budget is 0 s" in r.stdout, r.stdout
    assert "OVER BUDGET: test_quick.py" not in r.stdout
    assert "test_quick.py" in r.stdout.split("slowest test files")[1]  # every file's time is listed


def test_files_within_their_budgets_pass(tmp_path):
    r = run_pytest(tmp_path, "1")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "OVER BUDGET" not in r.stdout and "s of    240 s  test_slow.py" in r.stdout
