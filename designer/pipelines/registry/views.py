"""Pages of the model registry (the endpoints' are endpoint_views.py). The list is drawn by the
server; a model's page by the page module modelpage, from the same JSON the API gives
(registry_api.version_json), put in the page. A user sees only their own models: anything else is 404."""
from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import render
from django.views.decorators.http import require_GET

from designer.engine import statuses as st
from designer.pipelines.models import RegisteredModel
from designer.pipelines.registry.api import model_summary, version_json


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
