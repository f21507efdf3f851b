"""Pages of the real-time endpoints. The list is drawn by the server; an endpoint's page by the page
module endpoint, from the same JSON the API gives (endpoints.endpoint_json), put in the page. A
user sees only their own endpoints: anything else is 404."""
from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import render
from django.views.decorators.http import require_GET

from designer.pipelines.endpoints import service as endpoints
from designer.pipelines.models import Endpoint


@login_required
@require_GET
def endpoint_list(request):
    mine = Endpoint.objects.filter(owner=request.user).select_related("version__model")
    return render(request, "pipelines/endpoints.html", {"endpoints": [endpoints.endpoint_json(e) for e in mine]})


@login_required
@require_GET
def endpoint_page(request, name):
    endpoint = Endpoint.objects.filter(owner=request.user, name=name).select_related("version__model").first()
    if endpoint is None:
        raise Http404(f"you have no endpoint {name!r}")
    return render(request, "pipelines/endpoint.html", {"endpoint": endpoint, "boot": endpoints.endpoint_json(endpoint)})
