"""The module catalogue a user sees: the modules/ package, the configured extra packages, the
component files of the settings folders (COMPONENT_DIRS), and the components the user uploaded
(components.py). A kind keeps every version: a pipeline's node pins the one it was saved with
(`"version"` in its JSON), and the palette offers the latest."""
from __future__ import annotations

import logging
import time
from functools import lru_cache

from django.conf import settings
from django.core import checks

from designer.engine import paths
from designer.engine.store import StoreError
from designer.pipelines import artifact_store
from designer.pipelines.models.components import Component, may_run_components
from modules import catalogue as module_catalogue
from modules._component import component_module
from sdk import component

logger = logging.getLogger(__name__)


class _Installed:
    """The installation's catalogue, loaded again when a component file of the settings folders
    changes (looked at once a second at most). An edit that breaks a file keeps the catalogue
    of before, with the problem in the log: start-up alone refuses a bad file."""

    def __init__(self):
        self.seen_at, self.stamp, self.good, self.bad_stamp, self.folders = -1e9, (), None, None, None

    def get(self) -> module_catalogue.Catalogue:
        now = time.monotonic()
        if self.folders != settings.COMPONENT_DIRS:  # other settings (tests): start again
            self.__init__()
            self.folders = settings.COMPONENT_DIRS
        if now - self.seen_at >= STAMP_SECONDS:
            self.seen_at, self.stamp = now, _stamp(settings.COMPONENT_DIRS)
        if self.good is not None and self.stamp == self.bad_stamp:
            return self.good
        try:
            self.good = module_catalogue.load(settings.EXTRA_MODULE_PACKAGES, settings.COMPONENT_DIRS, self.stamp)
        except Exception as e:
            if self.good is None:
                raise
            self.bad_stamp = self.stamp
            logger.error("a component file was changed and cannot be loaded; the one before stays: %s", e)
        return self.good


def _stamp(folders) -> tuple:
    found = []
    for folder in folders:
        for file in component.find(folder):
            try:
                st = file.stat()
            except OSError:
                continue
            found.append((str(file), st.st_mtime_ns, st.st_size))
    return tuple(found)


STAMP_SECONDS = 1.0
WITHHELD = ("is a component you uploaded, and you may no longer run components: an administrator withdrew the "
            "permission to add and run them (or your account is inactive); ask one to grant it again (the admin's "
            "users list: \"Allow the selected users to add components\")")
_installed = _Installed()


def get_catalogue(owner=None) -> module_catalogue.Catalogue:
    """Every module type offered to `owner` (a user or a user id); None: the installation's own
    (built-in modules and the settings folders' components), which every user sees. A user's
    uploaded components only while they may run them (the permission withdrawn: no more)."""
    base = _installed.get()
    if owner is None:
        return base
    owner_id = owner if isinstance(owner, int) else owner.pk
    rows = Component.objects.filter(owner_id=owner_id).only("pk", "folder", "file", "digest", "kind")
    # a kind the installation offers since (a settings folder's component added later) wins
    mine = [row for row in rows if row.kind not in base]
    if not mine:
        return base
    if not may_run_components(owner):  # (asked only of a user who has components)
        return base.withholding({row.kind: WITHHELD for row in mine})
    return base.with_components([m for row in mine if (m := _module_of(row.pk, row.folder, row.file, row.digest))])


def check_module_catalogue(app_configs=None, **kwargs):
    """A module file that cannot be loaded (a kind declared twice, an import error) or a bad
    component file of COMPONENT_DIRS (named: file, field, reason) stops `migrate`, `runserver`
    and the other commands at start-up, not at the first page."""
    try:
        get_catalogue()
    except Exception as e:  # any failure to load a module or component file is reported as is
        return [checks.Error(f"the module catalogue cannot be loaded: {type(e).__name__}: {e}",
                             hint="fix the file named, or DESIGNER_EXTRA_MODULES / DESIGNER_COMPONENT_DIRS",
                             id="pipelines.E001")]
    return []


@lru_cache(maxsize=1024)
def _module_of(pk: int, folder: str, file: str, digest: str):
    """The module type of an uploaded component version (its files never change: read once)."""
    try:
        paths.component_folder("/", folder)  # under components/, or OutsideFolder
        with artifact_store.held([folder]) as where:  # (with a bucket: in this machine's cache, the same path on every worker)
            spec = component.load(paths.inside(where[folder], file))
    except (component.ComponentError, paths.OutsideFolder, OSError, StoreError) as e:  # removed or damaged
        logger.warning("component %s cannot be loaded: %s", pk, e)
        return None
    return component_module(spec, origin="uploaded")
