"""Settings. The environment is read here and nowhere else.

Embedded defaults (no variable set): SQLite, a SQLite-backed Celery broker, an in-memory Channels
layer (the page then follows runs by reading the event store), artifacts on local disk.
Production: DATABASE_URL, CELERY_BROKER_URL, CHANNEL_LAYER_URL (Redis), ARTIFACT_STORE, SECRET_KEY,
ALLOWED_HOSTS, SECURE_HTTPS, STATIC_ROOT (docs/how-to/production.md). DEBUG is off unless set.
A bad value stops start-up with a message naming the variable (designer/envvars.py parses them).
"""
from __future__ import annotations

import os
import re
import socket
from datetime import timedelta
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from designer.envvars import env_bool, env_float, env_int, env_ports, env_str, env_url

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = Path(env_str("DESIGNER_DATA_DIR", str(BASE_DIR / "var")))
DATA_DIR.mkdir(parents=True, exist_ok=True)
# off unless asked for (`make run`, the browser tests' server): its error page shows source, paths, the broker's URL
DEBUG = env_bool("DEBUG", False)
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
    # each process takes its connections from a bounded pool (psycopg_pool, through Django): the web
    # app runs each request's ORM calls on a thread of its own, and one connection per thread ran
    # PostgreSQL out of connections under sixty simultaneous submits
    DATABASES["default"]["CONN_MAX_AGE"] = 0  # Django's pool requires it
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": 0,  # an idle process holds no connection; none is re-made behind its back
        "max_size": env_int("DB_POOL_SIZE", 10, minimum=1),
        "timeout": env_float("DB_POOL_TIMEOUT", 30.0, minimum=1),  # a request's wait for a free connection
    }

    def _forget_the_parents_pool():
        """A forked process (Celery's pool processes) makes its own pool: the one it inherits holds
        the parent's sockets and has lost its threads."""
        from django.db.backends.postgresql.base import DatabaseWrapper

        DatabaseWrapper._connection_pools.clear()

    os.register_at_fork(after_in_child=_forget_the_parents_pool)


def _secret_key() -> str:
    """A real key outside development. The embedded setup (one machine, SQLite) makes one and keeps
    it in DESIGNER_DATA_DIR; with shared services every process needs the same key, from SECRET_KEY."""
    key = os.environ.get("SECRET_KEY", "")
    if DEBUG:
        return key or "embedded-insecure-key-for-DEBUG-only"
    how = "at least 50 random characters, the same for the web app and every worker: " \
          "python3 -c 'import secrets; print(secrets.token_urlsafe(50))'"
    if not key and DATABASES["default"]["ENGINE"].endswith("sqlite3"):
        path = DATA_DIR / "secret_key"
        if not path.exists():  # written whole, then linked in: processes starting together agree
            import secrets
            import tempfile

            fd, tmp = tempfile.mkstemp(dir=DATA_DIR)  # readable by its owner only
            with os.fdopen(fd, "w") as f:
                f.write(secrets.token_urlsafe(50))
            try:
                os.link(tmp, path)
            except FileExistsError:
                pass
            finally:
                os.unlink(tmp)
        return path.read_text().strip()
    if not key:
        raise ImproperlyConfigured(f"SECRET_KEY is not set: with DEBUG off (production) set it to {how} (DEBUG=true is for development only)")
    if len(key) < 50 or len(set(key)) < 5 or key.startswith("django-insecure-"):
        raise ImproperlyConfigured(f"SECRET_KEY is too weak for production (DEBUG off): use {how}")
    return key


SECRET_KEY = _secret_key()

# ---------------------------------------------------------------- production HTTP
# SECURE_HTTPS=true when browsers reach the app over HTTPS (daphne with TLS, or a proxy in front
# that sets X-Forwarded-Proto with daphne --proxy-headers): HTTP is redirected, cookies travel over
# HTTPS only, and browsers are told to use HTTPS only for SECURE_HSTS_SECONDS (HSTS)
SECURE_HTTPS = env_bool("SECURE_HTTPS", False)
SECURE_SSL_REDIRECT = SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = SECURE_HTTPS
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 365 * 24 * 3600) if SECURE_HTTPS else 0
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", True)
SESSION_COOKIE_HTTPONLY = True
X_FRAME_OPTIONS = "DENY"
# where people open the web app: the headless commands print a run's address under it (unset:
# the address `make run` serves on, which it writes in the data folder; else localhost:8000)
SITE_URL_FILE = DATA_DIR / "site-url"


def _served_at() -> str:
    try:
        return SITE_URL_FILE.read_text(encoding="utf-8").strip()[:500] or "http://localhost:8000"
    except (OSError, UnicodeDecodeError):
        return "http://localhost:8000"


SITE_URL = env_url("SITE_URL", _served_at(), ("http", "https")).rstrip("/")
# django-csp: scripts from this site only (no inline script, no eval), nothing embedded elsewhere.
# Styles: X6 puts its stylesheet in a <style> element and the pages set style attributes, so
# inline styles are allowed; an injected style cannot run code.
CONTENT_SECURITY_POLICY = {"DIRECTIVES": {
    "default-src": ["'self'"], "script-src": ["'self'"], "style-src": ["'self'", "'unsafe-inline'"],
    "img-src": ["'self'", "data:", "blob:"], "connect-src": ["'self'"], "object-src": ["'none'"], "base-uri": ["'self'"],
    "form-action": ["'self'"], "frame-ancestors": ["'none'"]}}

# ---------------------------------------------------------------- sign-in throttling (django-axes)
# AXES_FAILURE_LIMIT wrong passwords in a row for one user name from one address lock that pair out for
# AXES_COOLOFF_MINUTES (sign-in and /admin); a good password resets it; `manage.py axes_reset_username NAME` lifts it.
AXES_FAILURE_LIMIT = env_int("AXES_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_MINUTES = env_int("AXES_COOLOFF_MINUTES", 15, minimum=1)
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_COOLOFF_TIME = timedelta(minutes=AXES_COOLOFF_MINUTES)

# ---------------------------------------------------------------- queue, events
CELERY_BROKER_URL = env_url(
    "CELERY_BROKER_URL", f"sqla+sqlite:///{DATA_DIR / 'broker.sqlite3'}", ("sqla+sqlite", "redis", "rediss", "amqp", "pyamqp")
)
CELERY_TASK_IGNORE_RESULT = True
# Redis: a worker with every slot taken reserves nothing (designer/celery.py). AMQP: a message a slot (the outbox
# resends one held back). SQLite: kombu waits 2 s whenever a worker reserved all it may.
CELERY_WORKER_PREFETCH_MULTIPLIER = 4 if CELERY_BROKER_URL.startswith("sqla") else 1
CELERY_TASK_DEFAULT_QUEUE = "designer"
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# kombu's SQLAlchemy transport hands its options to create_engine(): only Redis gets these
CELERY_BROKER_TRANSPORT_OPTIONS = {} if CELERY_BROKER_URL.startswith("sqla") else {"visibility_timeout": 3600}
# how often a worker on the embedded (SQLite) broker looks for work (designer/embedded_broker.py): fast within
# BROKER_BUSY_SECONDS of its last message (30 ms a node), slowly after (an idle worker: 1% of a core, not 15%)
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
# every artifact (designer/engine/store.py): ARTIFACT_STORE, an absolute folder (the default:
# ARTIFACT_ROOT, its older name) or s3://bucket/prefix at ARTIFACT_STORE_ENDPOINT_URL (or boto's
# AWS_ENDPOINT_URL; none: AWS), with boto3's credentials (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, ...)
ARTIFACT_ROOT = Path(env_str("ARTIFACT_ROOT", str(DATA_DIR / "artifacts")))
ARTIFACT_STORE = env_str("ARTIFACT_STORE", "") or str(ARTIFACT_ROOT)
if not (re.fullmatch(r"s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/[^\0]*)?", ARTIFACT_STORE) or Path(ARTIFACT_STORE).is_absolute()):
    raise ImproperlyConfigured(f"{'ARTIFACT_STORE' if os.environ.get('ARTIFACT_STORE') else 'ARTIFACT_ROOT'}={ARTIFACT_STORE[:120]!r}: "
                               "expected an absolute folder or s3://bucket/prefix (a bucket: 3 to 63 lower-case letters, digits, '.' or '-')")
ARTIFACT_ROOT = ARTIFACT_ROOT if ARTIFACT_STORE.startswith("s3://") else Path(ARTIFACT_STORE)
_endpoint = "ARTIFACT_STORE_ENDPOINT_URL" if os.environ.get("ARTIFACT_STORE_ENDPOINT_URL") else "AWS_ENDPOINT_URL"
ARTIFACT_STORE_ENDPOINT_URL = env_url(_endpoint, "", ("http", "https")) if os.environ.get(_endpoint) else None
# with a bucket, each worker's cache of the trees its nodes read and write: at most WORKER_CACHE_MB,
# the least recently used that no running node reads goes first; the same path on every worker
WORKER_CACHE_DIR = Path(env_str("WORKER_CACHE_DIR", str(DATA_DIR / "worker-cache"))).absolute()
WORKER_CACHE_MB = env_float("WORKER_CACHE_MB", 50 * 1024, minimum=1)
LOG_SYNC_SECONDS = env_float("LOG_SYNC_SECONDS", 2.0, minimum=0.1)  # how often a running node's logs reach the store
# how long a node waits for a store that is away (a restart, the network) to fetch its inputs or
# keep its outputs, trying again, before it is failed saying so
STORE_RETRY_SECONDS = env_float("STORE_RETRY_SECONDS", 300.0, minimum=0)
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
# component files (component.yaml with its code folder) every user's palette offers: folders
# separated by ':', searched recursively; empty: none. A bad file stops start-up, naming it.
COMPONENT_DIRS = tuple(Path(p) for p in env_str("DESIGNER_COMPONENT_DIRS", str(BASE_DIR / "examples" / "components"))
                       .split(os.pathsep) if p)
# an uploaded component (an archive, or the files of a folder): larger ones are refused (413)
COMPONENT_MAX_UPLOAD_MB = env_float("COMPONENT_MAX_UPLOAD_MB", 100, minimum=1)
COMPONENT_MAX_UPLOAD_BYTES = int(COMPONENT_MAX_UPLOAD_MB * 1024 * 1024)
# a running node's worker writes a heartbeat; a node silent for longer was lost with its worker
HEARTBEAT_SECONDS = env_float("HEARTBEAT_SECONDS", 2.0, minimum=0.1)
LOST_AFTER_SECONDS = env_float("LOST_AFTER_SECONDS", 30.0, minimum=1)
# the maintenance loop (designer/pipelines/maintenance.py, one process at a time): its tick; a silent holder's
# lease; how often it collects the folders of deleted runs (nothing waits on them; a scan walks the deleted runs)
MAINTENANCE_SECONDS = env_float("MAINTENANCE_SECONDS", 2.0, minimum=0.1)
MAINTENANCE_LEASE_SECONDS = env_float("MAINTENANCE_LEASE_SECONDS", 10.0, minimum=1)
RETENTION_SECONDS = env_float("RETENTION_SECONDS", 30.0, minimum=0.1)
# a cancelled module past this many seconds without a safe point (ctx.check_cancelled): cancelled, its pool process ended
CANCEL_GRACE_SECONDS = env_float("CANCEL_GRACE_SECONDS", 30.0, minimum=0.1)
# the outbox (designer/pipelines/runs/outbox.py): retry a refused message; resend one no idle worker took, doubling to the max
DISPATCH_RETRY_SECONDS = env_float("DISPATCH_RETRY_SECONDS", 1.0, minimum=0.1)
RESEND_AFTER_SECONDS = env_float("RESEND_AFTER_SECONDS", 30.0, minimum=0.5)
RESEND_MAX_SECONDS = env_float("RESEND_MAX_SECONDS", 600.0, minimum=0.5)


# distributed training (designer/pipelines/runs/launchers/distributed.py): the address other workers reach this worker
# at (its host name by default), the rendezvous port(s) tried at the node-0 worker, and
# how long the other workers of a job have to start their part before the node fails
WORKER_ADDRESS = env_str("WORKER_ADDRESS", "") or socket.gethostname()
DISTRIBUTED_PORTS = env_ports("DISTRIBUTED_PORTS", "0")
DISTRIBUTED_START_SECONDS = env_float("DISTRIBUTED_START_SECONDS", 30.0, minimum=1)
# the CPU cores this worker offers as units to distributed jobs (0: all of the machine's): a
# worker sharing its machine with others offers its part only
WORKER_CPUS = env_int("WORKER_CPUS", 0) or os.cpu_count() or 1
# the compute target this worker joins (designer/engine/targets.py): nodes of a pipeline that names
# it run on its workers only. Empty: "gpu" when the worker's GPUs work (CUDA starts), else "cpu"
WORKER_COMPUTE_TARGET = env_str("WORKER_COMPUTE_TARGET", "")
if WORKER_COMPUTE_TARGET and not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}", WORKER_COMPUTE_TARGET):
    raise ImproperlyConfigured(f"WORKER_COMPUTE_TARGET={WORKER_COMPUTE_TARGET[:80]!r}: a compute target's name is 1 to 64 "
                               "letters, digits, '_', '.' or '-', starting with a letter or a digit")

# ---------------------------------------------------------------- real-time scoring (designer/serving)
# `python -m designer.serving` listens on SERVING_HOST:SERVING_PORT; SERVING_URL is where clients
# reach it (the web app sends scoring requests there: a load balancer's address in production)
SERVING_HOST = env_str("SERVING_HOST", "127.0.0.1")
SERVING_PORT = env_int("SERVING_PORT", 8001, minimum=1)
SERVING_URL = env_url("SERVING_URL", f"http://{SERVING_HOST}:{SERVING_PORT}", ("http", "https")).rstrip("/")
# processes on one port (one machine); each loads every endpoint and batches on its own
SERVING_REPLICAS = env_int("SERVING_REPLICAS", 1, minimum=1)
# a request's body (refused before it is read), one image in it, and how many images a request may hold
SERVING_MAX_REQUEST_MB = env_float("SERVING_MAX_REQUEST_MB", 32, minimum=0.001)
SERVING_MAX_REQUEST_BYTES = int(SERVING_MAX_REQUEST_MB * 1024 * 1024)
SERVING_MAX_IMAGE_MB = env_float("SERVING_MAX_IMAGE_MB", 10, minimum=0.001)
SERVING_MAX_IMAGE_BYTES = int(SERVING_MAX_IMAGE_MB * 1024 * 1024)
SERVING_MAX_IMAGES = env_int("SERVING_MAX_IMAGES", 64, minimum=1)
# decoding costs pixels, not bytes (a 4 KB PNG may declare 6000 x 6000): the pixels one image and all the
# images of one request may declare, read from their headers before any is decoded
SERVING_MAX_IMAGE_PIXELS = env_int("SERVING_MAX_IMAGE_PIXELS", 25_000_000, minimum=1)
SERVING_MAX_REQUEST_PIXELS = env_int("SERVING_MAX_REQUEST_PIXELS", 50_000_000, minimum=1)
# slow clients: a request's headers must have come within SERVING_HEADER_SECONDS of its first byte, its body
# within SERVING_BODY_SECONDS of its headers; an idle kept-alive connection is closed after SERVING_KEEP_ALIVE_SECONDS
SERVING_HEADER_SECONDS = env_float("SERVING_HEADER_SECONDS", 10.0, minimum=0.1)
SERVING_BODY_SECONDS = env_float("SERVING_BODY_SECONDS", 30.0, minimum=0.1)
SERVING_KEEP_ALIVE_SECONDS = env_float("SERVING_KEEP_ALIVE_SECONDS", 5.0, minimum=0.1)
# micro-batching: SERVING_MAX_BATCH images per model call at most, waiting SERVING_MAX_WAIT_MS at most for images being decoded
SERVING_MAX_BATCH = env_int("SERVING_MAX_BATCH", 32, minimum=1)
SERVING_MAX_WAIT_MS = env_float("SERVING_MAX_WAIT_MS", 2.0)
# ONNX Runtime threads per model call (0: the machine's cores shared among the replicas)
SERVING_THREADS = env_int("SERVING_THREADS", 0)
# how often a serving process reads the endpoints (a new version, a key) and writes its heartbeat and counts
SERVING_POLL_SECONDS = env_float("SERVING_POLL_SECONDS", 0.5, minimum=0.05)
SERVING_FLUSH_SECONDS = env_float("SERVING_FLUSH_SECONDS", 1.0, minimum=0.05)
# an entry script's init() and each of its run() (designer/serving/scripts.py): past these its process is ended
SERVING_SCRIPT_INIT_SECONDS, SERVING_SCRIPT_SECONDS = (env_float("SERVING_SCRIPT_INIT_SECONDS", 300.0, minimum=0.1),
                                                       env_float("SERVING_SCRIPT_SECONDS", 60.0, minimum=0.1))

# ---------------------------------------------------------------- Django
INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "axes",
    "csp",
    "channels",
    "django_htmx",
    "designer.pipelines",
]
MIDDLEWARE = [
    "designer.middleware.JsonErrorsForApi",  # first: it sees every answer under /api/
    "django.middleware.security.SecurityMiddleware",
    # static files from STATIC_ROOT (collectstatic), compressed, before anything else runs
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "csp.middleware.CSPMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "designer.token_auth.BearerTokens",  # after the session's user: a personal API token under /api/
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "axes.middleware.AxesMiddleware",  # last: turns a lock-out into the page that says so
]
# django-axes counts failed sign-ins (sign-in page and /admin) before the usual check of the password
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]
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
STATIC_ROOT = Path(env_str("STATIC_ROOT", str(DATA_DIR / "static")))
# of node_modules, only the folders of built files the pages load: collectstatic copies 345 files
# (16 MB with their gzip copies) in 3 s, against 3,506 (47 MB) in 5 s with all of node_modules
STATICFILES_DIRS = [BASE_DIR / "static"] + [
    (f"vendor/{dist}", BASE_DIR / "node_modules" / dist)
    for dist in ("htmx.org/dist", "@antv/x6/dist", "@dagrejs/dagre/dist", "chart.js/dist", "yaml/browser")
]
# WhiteNoise serves what `manage.py collectstatic` gathered in STATIC_ROOT, with gzip copies
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
DATA_UPLOAD_MAX_MEMORY_SIZE = REQUEST_MAX_BODY_BYTES  # one limit for a body: raising it raises both (limits.py answers 413)
CSRF_FAILURE_VIEW = "designer.middleware.csrf_failure"  # JSON under /api/
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": "WARNING"},
}
