"""Settings. The environment is read here and nowhere else.

Embedded defaults (no variable set): SQLite, a SQLite-backed Celery broker, an in-memory Channels
layer (the page then follows runs by reading the event store), artifacts on local disk.
Production: DATABASE_URL, CELERY_BROKER_URL, CHANNEL_LAYER_URL (Redis), ARTIFACT_ROOT.
A bad value stops start-up with a message naming the variable.
"""
from __future__ import annotations

import os
import socket
from pathlib import Path
from urllib.parse import urlparse

from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


def env_str(name: str, default: str) -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    if raw.lower() in ("1", "true", "yes", "on"):
        return True
    if raw.lower() in ("0", "false", "no", "off", ""):
        return False
    raise ImproperlyConfigured(f"{name}={raw!r}: expected true or false")


def _env_number(name: str, default, minimum, parse, expected: str):
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        value = parse(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r}: expected {expected}")
    if value < minimum:
        raise ImproperlyConfigured(f"{name}={raw!r}: must be at least {minimum}")
    return value


def env_float(name: str, default: float, minimum: float = 0) -> float:
    return _env_number(name, default, minimum, float, "a number")


def env_int(name: str, default: int, minimum: int = 0) -> int:
    return _env_number(name, default, minimum, int, "a whole number")


def env_url(name: str, default: str, schemes: tuple[str, ...]) -> str:
    raw = os.environ.get(name, default)
    scheme = urlparse(raw).scheme
    if scheme not in schemes:
        raise ImproperlyConfigured(f"{name}={raw!r}: expected a URL starting with one of {', '.join(s + '://' for s in schemes)}")
    return raw


DATA_DIR = Path(env_str("DESIGNER_DATA_DIR", str(BASE_DIR / "var")))
DATA_DIR.mkdir(parents=True, exist_ok=True)
DEBUG = env_bool("DEBUG", True)
SECRET_KEY = env_str("SECRET_KEY", "embedded-insecure-key-set-SECRET_KEY-in-production")
ALLOWED_HOSTS = [h for h in env_str("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]").split(",") if h]

# ---------------------------------------------------------------- database
_db_url = env_url("DATABASE_URL", f"sqlite:///{DATA_DIR / 'designer.sqlite3'}", ("sqlite", "postgres", "postgresql"))
if _db_url.startswith("sqlite"):
    _sqlite_path = _db_url[len("sqlite:///"):] or str(DATA_DIR / "designer.sqlite3")
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": _sqlite_path,
            # workers and the web process write at the same time: wait, and take the write lock
            # at BEGIN so that a read-then-write transaction cannot deadlock.
            "OPTIONS": {"timeout": 30, "transaction_mode": "IMMEDIATE", "init_command": "PRAGMA journal_mode=WAL;"},
            # a file, not memory: test workers are separate processes that must see the test database
            "TEST": {"NAME": str(Path(_sqlite_path).with_name("test-" + Path(_sqlite_path).name))},
        }
    }
else:
    import dj_database_url

    try:
        DATABASES = {"default": dj_database_url.parse(_db_url, conn_max_age=60)}
    except ValueError as e:
        raise ImproperlyConfigured(f"DATABASE_URL={_db_url!r}: {e}")

# ---------------------------------------------------------------- queue, events
CELERY_BROKER_URL = env_url(
    "CELERY_BROKER_URL", f"sqla+sqlite:///{DATA_DIR / 'broker.sqlite3'}", ("sqla+sqlite", "redis", "rediss", "amqp", "pyamqp")
)
CELERY_TASK_IGNORE_RESULT = True
# Redis/AMQP: a busy worker reserves nothing, so that a queued node goes to an idle worker.
# Embedded: kombu's SQLite transport waits 2 s when the worker has reserved all it may, which
# a one-process worker always has while it runs a node: let it reserve a few.
CELERY_WORKER_PREFETCH_MULTIPLIER = 4 if CELERY_BROKER_URL.startswith("sqla") else 1
CELERY_TASK_DEFAULT_QUEUE = "designer"
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# kombu's SQLAlchemy transport hands its options to create_engine(): only Redis gets these
CELERY_BROKER_TRANSPORT_OPTIONS = {} if CELERY_BROKER_URL.startswith("sqla") else {"visibility_timeout": 3600}
# how often a worker on the embedded (SQLite) broker looks for work (designer/embedded_broker.py):
# fast within BROKER_BUSY_SECONDS of its last message (about 30 ms per node of a pipeline), slowly
# after that (an idle worker then costs about 1% of a core instead of 15%)
BROKER_POLL_SECONDS = env_float("BROKER_POLL_SECONDS", 0.02, minimum=0.001)
BROKER_BUSY_SECONDS = env_float("BROKER_BUSY_SECONDS", 2.0)
BROKER_IDLE_POLL_SECONDS = env_float("BROKER_IDLE_POLL_SECONDS", 0.25, minimum=0.001)
CELERY_WORKER_HIJACK_ROOT_LOGGER = False

CHANNEL_LAYER_URL = os.environ.get("CHANNEL_LAYER_URL")
if CHANNEL_LAYER_URL:
    env_url("CHANNEL_LAYER_URL", "", ("redis", "rediss"))
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": {"hosts": [CHANNEL_LAYER_URL]}}}
else:
    # in-memory cannot carry events from a worker process: consumers then poll the event store
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
EVENT_POLL_SECONDS = env_float("EVENT_POLL_SECONDS", 0.5 if not CHANNEL_LAYER_URL else 5.0, minimum=0.05)

# ---------------------------------------------------------------- artifacts, workers
ARTIFACT_ROOT = Path(env_str("ARTIFACT_ROOT", str(DATA_DIR / "artifacts")))
if not ARTIFACT_ROOT.is_absolute():
    raise ImproperlyConfigured(f"ARTIFACT_ROOT={str(ARTIFACT_ROOT)!r}: must be an absolute path")
# uploaded datasets live under ARTIFACT_ROOT/datasets/<owner id>/...; larger uploads are refused (413)
DATASET_MAX_UPLOAD_MB = env_float("DATASET_MAX_UPLOAD_MB", 2048, minimum=1)
DATASET_MAX_UPLOAD_BYTES = int(DATASET_MAX_UPLOAD_MB * 1024 * 1024)
# request bodies (designer/limits.py refuses larger ones from their headers, before reading them):
# any request but a dataset upload, and any request of a visitor who is not signed in
REQUEST_MAX_BODY_MB = env_float("REQUEST_MAX_BODY_MB", 20, minimum=1)
REQUEST_MAX_BODY_BYTES = int(REQUEST_MAX_BODY_MB * 1024 * 1024)
ANONYMOUS_MAX_BODY_KB = env_float("ANONYMOUS_MAX_BODY_KB", 64, minimum=1)
ANONYMOUS_MAX_BODY_BYTES = int(ANONYMOUS_MAX_BODY_KB * 1024)
EXTRA_MODULE_PACKAGES = tuple(p for p in env_str("DESIGNER_EXTRA_MODULES", "").split(",") if p)
# a running node's worker writes a heartbeat; a node silent for longer was lost with its worker
HEARTBEAT_SECONDS = env_float("HEARTBEAT_SECONDS", 2.0, minimum=0.1)
LOST_AFTER_SECONDS = env_float("LOST_AFTER_SECONDS", 30.0, minimum=1)
# the outbox (designer/pipelines/outbox.py): a message the broker refused is tried again after
# DISPATCH_RETRY_SECONDS; one it took but no idle worker picked up (a broker restarted empty) is
# sent again after RESEND_AFTER_SECONDS, doubling each time up to RESEND_MAX_SECONDS
DISPATCH_RETRY_SECONDS = env_float("DISPATCH_RETRY_SECONDS", 1.0, minimum=0.1)
RESEND_AFTER_SECONDS = env_float("RESEND_AFTER_SECONDS", 30.0, minimum=0.5)
RESEND_MAX_SECONDS = env_float("RESEND_MAX_SECONDS", 600.0, minimum=0.5)


def env_ports(name: str, default: str) -> list[int]:
    """`0` (any free port), `29500`, or a range `29500-29510`."""
    raw = os.environ.get(name, default)
    try:
        first, _, last = raw.partition("-")
        ports = list(range(int(first), int(last or first) + 1))
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r}: expected 0, a port (29500) or a range (29500-29510)")
    if not ports or not all(0 <= p <= 65535 for p in ports):
        raise ImproperlyConfigured(f"{name}={raw!r}: ports are between 0 and 65535, the first one not after the last")
    return ports


# distributed training (designer/pipelines/gang.py): the address other workers reach this worker
# at (its host name by default), the rendezvous port(s) tried at the node-0 worker, and
# how long the other workers of a job have to start their part before the node fails
WORKER_ADDRESS = env_str("WORKER_ADDRESS", "") or socket.gethostname()
DISTRIBUTED_PORTS = env_ports("DISTRIBUTED_PORTS", "0")
DISTRIBUTED_START_SECONDS = env_float("DISTRIBUTED_START_SECONDS", 30.0, minimum=1)
# the CPU cores this worker offers as units to distributed jobs (0: all of the machine's): a
# worker sharing its machine with others offers its part only
WORKER_CPUS = env_int("WORKER_CPUS", 0) or os.cpu_count() or 1

# ---------------------------------------------------------------- Django
INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "django_htmx",
    "designer.pipelines",
]
MIDDLEWARE = [
    "designer.middleware.JsonErrorsForApi",  # first: it sees every answer under /api/
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]
ROOT_URLCONF = "designer.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]
ASGI_APPLICATION = "designer.asgi.application"
WSGI_APPLICATION = None
AUTH_PASSWORD_VALIDATORS = [{"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"}]
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/accounts/login/"
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True
STATIC_URL = "/static/"
STATIC_ROOT = DATA_DIR / "static"
STATICFILES_DIRS = [BASE_DIR / "static", ("vendor", BASE_DIR / "node_modules")]
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
DATA_UPLOAD_MAX_MEMORY_SIZE = 20 * 1024 * 1024
CSRF_FAILURE_VIEW = "designer.middleware.csrf_failure"  # JSON under /api/
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": "WARNING"},
}
