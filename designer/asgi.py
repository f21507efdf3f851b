import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "designer.settings")
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402 - needs Django set up first
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402
from django.conf import settings  # noqa: E402
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler  # noqa: E402
from django.urls import path  # noqa: E402

from designer import limits  # noqa: E402
from designer.pipelines import artifact_store  # noqa: E402
from designer.pipelines.runs.consumers import RunConsumer, SweepConsumer  # noqa: E402

# a store the app cannot read or write stops it here, naming the setting and the bucket
artifact_store.check_at_start()

# daphne (and runserver, daphne's) refuse an oversized or anonymous body before reading it
limits.install()

# with DEBUG, a bare `daphne designer.asgi:application` (the browser tests) serves static files
# from their folders; without, WhiteNoise's middleware serves what collectstatic gathered
if settings.DEBUG:
    django_asgi_app = ASGIStaticFilesHandler(django_asgi_app)

application = ProtocolTypeRouter({
    "http": django_asgi_app,
    "websocket": AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter([
        path("ws/runs/<int:pk>/", RunConsumer.as_asgi()),
        path("ws/sweeps/<int:pk>/", SweepConsumer.as_asgi()),
    ]))),
})
