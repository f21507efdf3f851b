"""The time budget per test file (tests/budget.py): a file over its budget fails the run and is named."""
import os
import re
import subprocess
import sys
import time

import pytest

from tests import machine
from tests.conftest import ROOT


def run_pytest(tmp_path, scale: str, *plugins: str, slowness: str = "1") -> subprocess.CompletedProcess:
    (tmp_path / "conftest.py").write_text("from tests import budget\n\n\ndef pytest_configure(config):\n    budget.register(config)\n")
    (tmp_path / "test_slow.py").write_text("import time\n\n\ndef test_slow():\n    time.sleep(0.5)\n\n\ndef test_quick():\n    pass\n")
    (tmp_path / "test_quick.py").write_text("def test_quick():\n    pass\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TEST_BUDGET_SCALE": scale, machine.ENV: slowness,
           "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}  # this suite's plugins (Django and others) are not needed
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-c", os.devnull, *plugins,
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


def test_on_a_machine_twice_as_slow_as_the_reference_the_budgets_are_twice_as_long_and_the_summary_says_why(tmp_path):
    r = run_pytest(tmp_path, "1", slowness="2")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "s of    480 s  test_slow.py" in r.stdout, r.stdout
    assert "this machine took 2.00 times the reference machine's time" in r.stdout, r.stdout


def test_the_slowness_measured_is_the_work_against_the_reference_between_1_and_its_maximum(monkeypatch):
    monkeypatch.setattr(machine, "REFERENCE_SECONDS", 1e-9)  # any machine is slower than that one
    assert machine.measure(samples=2) == machine.MAX
    monkeypatch.setattr(machine, "REFERENCE_SECONDS", 1e3)  # or faster than that: nothing is made shorter
    assert machine.measure(samples=2) == 1
    monkeypatch.setattr(machine, "REFERENCE_SECONDS", 1.0)
    monkeypatch.setattr(machine, "_work", lambda: time.sleep(1.5))
    assert machine.measure(samples=1) == pytest.approx(1.5, abs=0.3)
    monkeypatch.setenv(machine.ENV, "1.5")
    assert machine.patience(10) == 15  # a wait of 10 s on the reference machine


API_TEST = '''import json
import time

import pytest
import schemathesis
from hypothesis import settings

DOCUMENT = {"openapi": "3.0.3", "info": {"title": "slow", "version": "1"}, "paths": {
    p: {"get": {"responses": {"200": {"description": "ok"}}}} for p in ("/a", "/b")}}


def app(environ, start_response):
    start_response("200 OK", [("Content-Type", "application/json")])
    if environ["PATH_INFO"] == "/openapi.json":
        return [json.dumps(DOCUMENT).encode()]
    if environ["REQUEST_METHOD"] == "GET":  # what the document describes (schemathesis tries others too)
        time.sleep(0.5)
        with open("requests.txt", "a") as f:
            f.write("x")
    return [b"{}"]


@pytest.fixture
def api():
    return schemathesis.openapi.from_wsgi("/openapi.json", app)


schema = schemathesis.pytest.from_fixture("api")


@schema.parametrize()
@settings(max_examples=1, deadline=None)
def test_api(case):
    case.call()
'''


def test_a_fuzzed_apis_operations_count_once_in_their_files_time(tmp_path):
    """schemathesis reports each operation it fuzzes apart, inside its test's call: the file's time is
    the test's, not twice it (the production pass's API fuzzing was over its budget so)."""
    (tmp_path / "test_api.py").write_text(API_TEST)
    r = run_pytest(tmp_path, "1", "-p", "schemathesis.pytest.plugin")
    assert r.returncode == 0, r.stdout + r.stderr
    slept = 0.5 * len((tmp_path / "requests.txt").read_text())  # each request sleeps 0.5 s
    took = float(re.search(r"([\d.]+) s of +\d+ s  test_api\.py", r.stdout)[1])  # the file's listed time
    assert slept >= 1 and slept <= took < 1.8 * slept, (slept, r.stdout)  # counted twice: 2 x slept and more


def test_on_a_slower_machine_a_tests_timeout_is_that_much_longer(tmp_path):
    """pytest-timeout's limit (here a mark of 1 s on a test of 1.5 s) times the slowness measured."""
    (tmp_path / "conftest.py").write_text("from tests import machine\n\n\ndef pytest_collection_modifyitems(config, items):\n"
                                          "    machine.lengthen_timeouts(config, items)\n")
    (tmp_path / "test_long.py").write_text("import time\n\nimport pytest\n\n\n@pytest.mark.timeout(1)\n"
                                           "def test_long():\n    time.sleep(1.5)\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}

    def run(slowness: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "pytest_timeout",
                               "-c", os.devnull, "--rootdir", str(tmp_path), str(tmp_path)],
                              cwd=tmp_path, env={**env, machine.ENV: slowness}, capture_output=True, text=True, timeout=120)

    assert "Timeout (>1.0s)" in run("1").stdout  # as written: ended after 1 s
    r = run("2")
    assert r.returncode == 0 and "1 passed" in r.stdout, r.stdout + r.stderr
