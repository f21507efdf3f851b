"""The module catalogue of this installation (the modules/ package plus configured extras)."""
from django.conf import settings

from modules import registry


def get_catalogue() -> registry.Catalogue:
    return registry.load(settings.EXTRA_MODULE_PACKAGES)
