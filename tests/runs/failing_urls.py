"""The app's URLs and one API view that fails as a bug would (tests of the 500 answer)."""
from django.urls import path

from designer.urls import urlpatterns as app_urls


def fail(request):
    raise RuntimeError("secret detail of a bug")


urlpatterns = [path("api/fail", fail), *app_urls]
