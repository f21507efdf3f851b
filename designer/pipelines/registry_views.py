"""Pages of the model registry and of the endpoints. The lists are drawn by the server; a model's
page by the page module modelpage and an endpoint's by the page module endpoint, from the same JSON the
API gives (registry_api.version_json, endpoints.endpoint_json), put in the page. A user sees only
their own models and endpoints: anything else is 404."""
from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import render
from django.views.decorators.http import require_GET

from designer.engine import statuses as st
from designer.pipelines import endpoints
from designer.pipelines.models import Endpoint, RegisteredModel
from designer.pipelines.registry_api import model_summary, version_json


@login_required
@require_GET
def model_list(request):
    models = RegisteredModel.objects.filter(owner=request.user).prefetch_related("versions__endpoints")
    rows = []
    for m in models:
        served = sorted({e.name for v in m.versions.all() for e in v.endpoints.all()})
        ready = sum(v.status == st.READY for v in m.versions.all())
        rows.append({**model_summary(m), "updated_at": m.updated_at, "endpoints": served, "ready": ready})
    return render(request, "pipelines/models.html", {"models": rows})


@login_required
@require_GET
def model_page(request, name):
    model = RegisteredModel.objects.filter(owner=request.user, name=name).first()
    if model is None:
        raise Http404(f"you have no model {name!r}")
    versions = model.versions.select_related("model").order_by("-version")
    return render(request, "pipelines/model.html", {
        "model": model, "boot": {"name": model.name, "versions": [version_json(v) for v in versions]},
    })


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
