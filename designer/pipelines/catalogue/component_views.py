"""The components page: the user's uploaded components by kind with their versions, ports,
parameters and command, and (with the permission) the upload form. Drawn by the page module components
from the JSON GET /api/components gives (components_api.listing), put in the page; the
installation's own components (the settings folders') are listed by label."""
from __future__ import annotations

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.views.decorators.http import require_GET

from designer.pipelines.catalogue import components
from designer.pipelines.catalogue import service as catalogue
from designer.pipelines.catalogue.components_api import listing


def site_components() -> list[str]:
    """The labels of the components every user has: those of the settings folders."""
    return sorted(m.label for m in catalogue.get_catalogue() if getattr(m, "component", None) is not None)


@login_required
@require_GET
def component_list(request):
    boot = {**listing(request.user), "max_files": settings.DATA_UPLOAD_MAX_NUMBER_FILES,
            "archive_suffixes": list(components.ARCHIVE_SUFFIXES)}
    return render(request, "pipelines/components.html", {
        "boot": boot, "can_add": boot["can_add"], "site": site_components(),
        "permission": components.PERMISSION_NAME,
    })
