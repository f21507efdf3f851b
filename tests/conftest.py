"""Test environment: set before Django loads its settings (pytest-django then sets Django up).

Tests that need a worker start real Celery workers (`celery_worker` fixture) on the same
database and broker as the test process: SQLite + SQLite broker by default, PostgreSQL + Redis
when `make test` runs the `production` tests with DATABASE_URL and CELERY_BROKER_URL set.
"""
import atexit
import os
import re
import shutil
import tempfile
import time
from pathlib import Path

import pytest

from tests import budget, machine
from tests.workers import CeleryWorker, KeptWorkers, stop_all, worker_database_url  # noqa: F401 - re-exported for tests

ROOT = Path(__file__).resolve().parent.parent
# one folder per test session: engineers (and CI's two passes) may run tests side by side
(ROOT / "var").mkdir(exist_ok=True)
TEST_DATA = Path(tempfile.mkdtemp(prefix="test-", dir=ROOT / "var"))
if not os.environ.get("KEEP_TEST_DATA"):
    atexit.register(shutil.rmtree, TEST_DATA, ignore_errors=True)
# the environment as given: pytest-xdist's processes start from it (pytest_xdist_setupnodes below)
_GIVEN_ENVIRONMENT = dict(os.environ)
os.environ.setdefault("DESIGNER_EXTRA_MODULES", "tests.toy_modules")
# the examples' components, and small test components (tests/components) every process offers
os.environ.setdefault("DESIGNER_COMPONENT_DIRS", os.pathsep.join([str(ROOT / "examples" / "components"),
                                                                  str(ROOT / "tests" / "components")]))
os.environ.setdefault("DESIGNER_DATA_DIR", str(TEST_DATA))
os.environ.setdefault("ARTIFACT_ROOT", str(TEST_DATA / "artifacts"))
os.environ.setdefault("HEARTBEAT_SECONDS", "0.5")
os.environ.setdefault("LOST_AFTER_SECONDS", "8")  # generous: CI machines are busy
os.environ.setdefault("MAINTENANCE_SECONDS", "0.5")
os.environ.setdefault("RETENTION_SECONDS", "1")  # a deleted run's folders go within a second, not 30
os.environ.setdefault("MAINTENANCE_LEASE_SECONDS", "4")  # a killed holder is taken over within seconds
# DEBUG is off in tests, as in production, which then needs a real key (the test servers and workers share it)
os.environ.setdefault("SECRET_KEY", "tests-only-" + "k3y-0f-th3-t3st-s3ss10n-" * 3)
# torch in the test processes (module tests train in-process) takes one core: two or three test
# processes share two cores, and more threads than cores is far slower (supervision/launch.py,
# slot_threads). The workers the tests start take their share as in production (tests/workers.py)
os.environ.setdefault("OMP_NUM_THREADS", "1")
(TEST_DATA / "static").mkdir()  # STATIC_ROOT: WhiteNoise warns without it (pages in tests need no collected files)
os.environ["DJANGO_SETTINGS_MODULE"] = "designer.settings"
# pytest-xdist's processes (`make test`) each have their own folder, SQLite files and test database
# (pytest-django's suffix); on Redis, process N uses the databases 2N below the given ones (a test
# empties its broker, and a worker takes any task of its queue). Two sessions side by side (`make
# test`'s two passes) number their processes apart: TEST_PROCESS_OFFSET is added to the second's
# (its ports, tests/servers.py, and its Redis databases then differ from the first's)
XDIST_INDEX = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0")[2:]) + int(os.environ.get("TEST_PROCESS_OFFSET", "0"))
for _name in ("CELERY_BROKER_URL", "CHANNEL_LAYER_URL"):
    if XDIST_INDEX and (_m := re.fullmatch(r"(rediss?://.*/)(\d+)", os.environ.get(_name, ""))):
        os.environ[_name] = f"{_m[1]}{int(_m[2]) - 2 * XDIST_INDEX}"

from django.conf import settings  # noqa: E402

settings.DATABASES  # noqa: B018 - load settings now; pytest-django sets Django up next


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_setupnodes(config, specs):
    """pytest-xdist's processes start from the environment this session was given, not from the one
    made above for this first process (its folder, its Django settings, which pytest-django would
    then load before this module runs there): each makes its own. This process needs it no more."""
    os.environ.clear()
    os.environ.update(_GIVEN_ENVIRONMENT)


def pytest_configure(config):
    # how slow this machine is (tests/machine.py), measured once: pytest-xdist's processes are given it
    _GIVEN_ENVIRONMENT.setdefault(machine.ENV, f"{machine.slowness():.2f}")
    budget.register(config)  # a time budget per test file: tests/budget.py


KEPT = KeptWorkers()
atexit.register(KEPT.keep_only, ())  # an interrupted session
KEPT_KEYS = pytest.StashKey[frozenset]()


def kept(key: str):
    """Marks a module-scoped worker fixture whose workers `KEPT` keeps for the next modules that use
    them (the fixture returns `KEPT.get(key, start)` and stops nothing itself)."""
    def mark(fixture_function):
        fixture_function.kept_workers = key
        return fixture_function
    return mark


def _kept_keys_of(item) -> set[str]:
    return {key for defs in item._fixtureinfo.name2fixturedefs.values()
            if (key := getattr(defs[-1].func, "kept_workers", None))}


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session, config, items):
    """Modules of one folder whose first test uses the same kept workers run one after the other,
    so that those workers start once for all of them; each test then knows which kept workers may
    stay alive during it: those it uses and those an earlier test of its module used. (A module's
    tests stay in pytest-django's order, which runs transactional tests after the others: a run is
    a module's tests that are next to each other, and runs move, never single tests.)"""
    module_runs: list[list] = []
    for item in items:
        if module_runs and module_runs[-1][0].module is item.module:
            module_runs[-1].append(item)
        else:
            module_runs.append([item])
    groups: dict[object, list] = {}
    for i, its in enumerate(module_runs):
        first = frozenset(_kept_keys_of(its[0]))
        groups.setdefault((Path(its[0].module.__file__).parent, first) if first else i, []).append(its)
    ordered = list(groups.values())
    if getattr(config.option, "loadgroup", False):  # `make test`: pytest-xdist, these groups as its units of work
        ordered = _xdist_units(ordered)
    items[:] = [item for group in ordered for its in group for item in its]
    for its in module_runs:
        keys: set[str] = set()
        for item in its:
            keys |= _kept_keys_of(item)
            item.stash[KEPT_KEYS] = frozenset(keys)
    machine.lengthen_timeouts(config, items)  # pytest-timeout's limits, longer on a slower machine


def _xdist_units(groups: list[list[list]]) -> list[list[list]]:
    """Under pytest-xdist (`make test`: `-n 2 --dist loadgroup --no-loadscope-reorder`), which
    sends whole units to each process as it gets free, in the order they come: a unit is a module,
    or modules of one folder that use the same kept workers, up to about UNIT_SECONDS of their time
    budgets (tests/budget.py) so that one long unit does not leave the other process idle at the
    end; the longest units come first. A unit is named by the suffix `@unitN` of its tests' ids (as
    xdist's own `xdist_group` mark does)."""
    units: list[tuple[float, list[list]]] = []
    for group in groups:
        chunk: list[list] = []
        weight = 0.0
        for its in group:
            seconds = budget.estimate(its[0].nodeid.split("::")[0])
            if chunk and weight + seconds > UNIT_SECONDS:
                units.append((weight, chunk))
                chunk, weight = [], 0.0
            chunk.append(its)
            weight += seconds
        units.append((weight, chunk))
    units.sort(key=lambda unit: -unit[0])  # stable: otherwise in the order of collection
    names: dict[str, str] = {}  # a module's runs that are not kept together are one unit
    for _, chunk in units:
        name = names.setdefault(chunk[0][0].nodeid.split("::")[0], f"unit{len(names) + 1}")
        for its in chunk:
            for item in its:
                item._nodeid = f"{item.nodeid}@{name}"  # what xdist itself does for `xdist_group`
    return [chunk for _, chunk in units]


UNIT_SECONDS = 600


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_teardown(item, nextitem):
    """Before the test's own teardown (the last one's ends the test database): stop the kept
    workers that the next test may not see."""
    KEPT.keep_only(nextitem.stash.get(KEPT_KEYS, frozenset()) if nextitem else ())


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session):
    KEPT.keep_only(())


@pytest.fixture(scope="session", autouse=True)
def _empty_queue():
    from designer.celery import app

    app.control.purge()  # tasks left in a shared broker (Redis) by an earlier session
    yield


def _flush_retrying_deadlocks(flush):
    """A test's end empties the tables (TRUNCATE); on PostgreSQL a worker process of an earlier
    test that is still winding down (its outbox sweep locks rows) can deadlock with it, and
    PostgreSQL then aborts one side: the flush is tried again (the worker's side goes on)."""
    def execute_sql_flush(self, sql_list):
        from django.db import OperationalError

        for attempt in range(5):
            try:
                return flush(self, sql_list)
            except OperationalError as e:
                if "deadlock detected" not in str(e) or attempt == 4:
                    raise
                time.sleep(0.5)
    return execute_sql_flush


@pytest.fixture(scope="session", autouse=True)
def _flush_survives_a_deadlock():
    from django.db.backends.base.operations import BaseDatabaseOperations

    original = BaseDatabaseOperations.execute_sql_flush
    BaseDatabaseOperations.execute_sql_flush = _flush_retrying_deadlocks(original)
    yield
    BaseDatabaseOperations.execute_sql_flush = original


@pytest.fixture(scope="session", autouse=True)
def _disconnect_others_before_dropping_the_test_database(django_db_setup, django_db_blocker):
    """Worker processes and async test threads may still hold PostgreSQL sessions at the end."""
    yield
    from django.db import connection

    if connection.vendor == "postgresql":
        with django_db_blocker.unblock(), connection.cursor() as c:
            c.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                      "WHERE datname = current_database() AND pid <> pg_backend_pid()")


@pytest.fixture
def users(db):
    from django.contrib.auth import get_user_model

    User = get_user_model()
    return {name: User.objects.create_user(name) for name in ("owner", "collaborator", "stranger")}


@pytest.fixture
def owner_client(client, users):
    client.force_login(users["owner"])
    return client


@pytest.fixture
def stranger_client(users):
    from django.test import Client

    c = Client()
    c.force_login(users["stranger"])
    return c


@pytest.fixture
def start_worker(transactional_db):
    started = []

    def start(name="w1", concurrency=2, wait=True, **kw):
        w = CeleryWorker(name, concurrency, log_dir=TEST_DATA, **kw)
        started.append(w)
        return w.wait_ready() if wait else w

    yield start
    stop_all(started)


@pytest.fixture(scope="module")
@kept("shared")
def shared_worker(django_db_setup, django_db_blocker):
    """One worker for a whole test module, and the next modules that use it (starting one costs
    seconds): the database is emptied after each test, the worker's row comes back at its next beat."""
    with django_db_blocker.unblock():
        return KEPT.get("shared", lambda: CeleryWorker("shared", concurrency=2, log_dir=TEST_DATA).wait_ready())


def may_add_components(user):
    """Grant `user` the permission an administrator grants in the admin: add components, and run
    the ones added (withdrawn, their components are offered and run no more)."""
    from django.contrib.auth.models import Permission

    user.user_permissions.add(Permission.objects.get(content_type__app_label="pipelines", codename="add_component"))
    return user


def stored_component(owner, kind: str, label: str, files: dict[str, str]):
    """A component `owner` uploaded (as the API stores one): its files in its folder of the
    artifact store, its row pointing at them. Returns the row."""
    import uuid

    from django.conf import settings

    from designer.engine import paths
    from designer.pipelines.models import Component

    row = Component.objects.create(owner=owner, kind=kind, version=1, label=label, folder="-", file="component.yaml",
                                   digest=uuid.uuid4().hex)
    folder = paths.component_dir(settings.ARTIFACT_ROOT, owner.id, row.id)
    folder.mkdir(parents=True)
    for name, text in files.items():
        (folder / name).write_text(text)
    row.folder = str(folder.relative_to(settings.ARTIFACT_ROOT))
    row.save()
    return row


def wait_for_run(run_id, timeout=60, until=None):
    """The run once it has finished (or `until` says so), waiting up to `timeout` seconds of the
    reference machine (tests/machine.py: longer on a slower one)."""
    from designer.pipelines.models import Run

    timeout = machine.patience(timeout)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = Run.objects.get(pk=run_id)
        if (until(run) if until else run.finished):
            return run
        time.sleep(0.1)
    statuses = {nr.node_id: nr.status for nr in Run.objects.get(pk=run_id).nodes.all()}
    raise TimeoutError(f"run {run_id} still {run.status} after {timeout} s: {statuses}")
