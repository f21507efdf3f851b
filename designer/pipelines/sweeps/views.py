"""Pages of sweeps and of run comparison. The sweep page is drawn by the page module sweep from
GET /api/sweeps/<id> (again when its websocket says the sweep changed, and every few seconds
while it runs); the comparison page by the page module compare from the data of compare.py, given
in the page."""
from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.db.models import Count
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from designer.engine import statuses
from designer.pipelines.models import Sweep
from designer.pipelines.sweeps import compare
from designer.pipelines.web import BadRequest


@login_required
@require_GET
def sweep_list(request):
    sweeps = (request.user.sweeps.select_related("pipeline", "best_trial")
              .annotate(trial_count=Count("trials")).order_by("-submitted_at"))
    return render(request, "pipelines/sweeps.html", {"sweeps": sweeps})


@login_required
@require_GET
def sweep_page(request, pk):
    sweep = get_object_or_404(Sweep.objects.select_related("pipeline"), pk=pk, owner=request.user)
    return render(request, "pipelines/sweep.html", {
        "sweep": sweep,
        "boot": {"id": sweep.id, "name": sweep.name, "pipeline": sweep.pipeline_id,
                 "statuses": statuses.for_page(), "max_compare": compare.MAX_RUNS},
    })


@login_required
@require_GET
def compare_page(request):
    """`?runs=1,2,3` (or `?runs=1&runs=2`, as the runs list's check boxes send it)."""
    try:
        data = compare.compare(request.user, request.GET.getlist("runs"))
    except BadRequest as e:
        return render(request, "pipelines/compare.html", {"error": e.body["error"]}, status=e.status)
    return render(request, "pipelines/compare.html", {"boot": data, "runs": data["runs"]})
