"""Pages. The designer canvas itself comes with the web-page issue; this is the pipelines list."""
from django.contrib.auth.decorators import login_required
from django.shortcuts import render


@login_required
def home(request):
    return render(request, "pipelines/home.html", {
        "pipelines": request.user.pipelines.all(),
        "runs": request.user.runs.select_related("pipeline")[:20],
    })
