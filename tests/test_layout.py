"""Issue 3, item 1: the repository's layout and its two set-up commands, as a newcomer meets them."""
import json
import re
import shutil
import subprocess

import pytest

from tests.conftest import ROOT


def test_the_top_level_shows_the_architecture():
    for folder in ("designer", "designer/engine", "designer/pipelines", "modules", "training", "static", "templates", "tests",
                   "bench"):
        assert (ROOT / folder).is_dir(), folder
    for name in ("manage.py", "requirements.txt", "package.json", "package-lock.json", "Makefile", "README.md", ".ci/run"):
        assert (ROOT / name).is_file(), name


def test_requirements_are_pinned_with_torch_and_torchvision_at_the_issues_versions():
    lines = [line.split("#")[0].strip() for line in (ROOT / "requirements.txt").read_text().splitlines()]
    requirements = [line for line in lines if line]
    unpinned = [r for r in requirements if not re.fullmatch(r"[A-Za-z0-9_.\-\[\],]+==[\w.]+", r)]
    assert unpinned == ["-e ./sdk"]  # the project's own SDK, installed in place (sdk/pyproject.toml)
    assert "torch==2.14.1" in requirements and "torchvision==0.29.1" in requirements


def test_npm_packages_come_from_the_lock_file():
    wanted = json.loads((ROOT / "package.json").read_text())["dependencies"]
    locked = json.loads((ROOT / "package-lock.json").read_text())["packages"]
    assert {name: locked[f"node_modules/{name}"]["version"] for name in wanted} == wanted


def test_the_readme_gives_exactly_two_set_up_commands():
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Set-up", 1)[1].split("\n## ", 1)[0]
    commands = [line.split("#")[0].strip() for line in section.splitlines() if line.startswith("    ")]
    assert commands == ["make run", "make test"]


def test_ci_runs_make_test():
    lines = [line.strip() for line in (ROOT / ".ci/run").read_text().splitlines() if line.strip() and not line.startswith("#")]
    assert lines[-1] == "make test"
    assert (ROOT / ".ci/run").stat().st_mode & 0o111


def planned(target):
    """What `make TARGET` would run on a fresh clone (every step forced, nothing run)."""
    return subprocess.run(["make", "-n", "-B", target], cwd=ROOT, capture_output=True, text=True, check=True).stdout


@pytest.mark.skipif(not shutil.which("make"), reason="needs make")
def test_make_run_and_make_test_install_what_is_missing_then_start_or_test():
    for target in ("run", "test"):
        steps = planned(target)
        assert "python3 -m venv .venv" in steps and re.search(r"pip install -q (--\S+ )*-r requirements.txt", steps), target
        assert "npm ci" in steps, target  # from package-lock.json, exactly
    run = planned("run")
    assert "manage.py migrate" in run and "celery -A designer.celery worker" in run and "manage.py runserver" in run
    assert "http://" in run  # the URL is printed
    test = planned("test")
    assert "apt-get -o DPkg::Lock::Timeout=600" in test and "install -y -qq chromium" in test
    # both passes, side by side (tests/passes.sh), the production one given the production services
    assert re.search(r'bash tests/passes.sh "DATABASE_URL=postgres://\S+ CELERY_BROKER_URL=redis://\S+ CHANNEL_LAYER_URL=redis://\S+ ',
                     test), test
    passes = (ROOT / "tests" / "passes.sh").read_text()
    assert 'XDIST=(--dist loadgroup --no-loadscope-reorder' in passes  # each pass in processes (pytest-xdist's units)
    assert re.search(r'env \$1 TEST_PROCESS_OFFSET=\d+ \$PY -m pytest -m production -n "\$\{PRODUCTION_PROCESSES:-1\}" "\$\{XDIST\[@\]\}" > "\$log" 2>&1 *\n.*\) &',
                     passes, re.S)  # in the background
    assert re.search(r'\$PY -m pytest -n "\$\{EMBEDDED_PROCESSES:-2\}" "\$\{XDIST\[@\]\}"\n', passes)
