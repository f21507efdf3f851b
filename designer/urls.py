from django.conf import settings
from django.contrib import admin
from django.contrib.auth.views import LoginView
from django.urls import include, path

from designer.pipelines import openapi
from designer.pipelines.accounts import api as tokens_api
from designer.pipelines.accounts import views as token_views
from designer.pipelines.catalogue import component_views, components_api
from designer.pipelines.datasets import api as datasets_api
from designer.pipelines.datasets import views as data_views
from designer.pipelines.endpoints import api as endpoints_api
from designer.pipelines.endpoints import views as endpoint_views
from designer.pipelines.jobs import views as job_views
from designer.pipelines.registry import api as registry_api
from designer.pipelines.registry import views as registry_views
from designer.pipelines.runs import api, views
from designer.pipelines.sweeps import api as sweeps_api
from designer.pipelines.sweeps import compare
from designer.pipelines.sweeps import views as sweep_views

api_patterns = [
    path("modules", api.module_list),
    path("validate", api.validate),
    path("compute", api.compute),
    path("pipelines", api.pipelines),
    path("pipelines/import", api.pipeline_import),
    path("pipelines/<int:pk>", api.pipeline_detail),
    path("pipelines/<int:pk>/clone", api.pipeline_clone),
    path("pipelines/<int:pk>/export", api.pipeline_export),
    path("pipelines/<int:pk>/runs", api.pipeline_runs),
    path("datasets", datasets_api.dataset_list),
    path("datasets/<int:pk>", datasets_api.dataset_detail),
    path("datasets/<int:pk>/download", datasets_api.dataset_download),
    path("sweeps", sweeps_api.sweep_list),
    path("sweeps/<int:pk>", sweeps_api.sweep_detail),
    path("sweeps/<int:pk>/cancel", sweeps_api.sweep_cancel),
    path("sweeps/<int:pk>/apply-best", sweeps_api.sweep_apply_best),
    path("models", registry_api.model_list),
    path("models/<str:name>", registry_api.model_detail),
    path("models/<str:name>/versions/<int:version>", registry_api.version_detail),
    path("models/<str:name>/versions/<int:version>/download", registry_api.version_download),
    path("schemas/component.json", components_api.component_schema),
    path("schemas/sweep-config.json", sweeps_api.sweep_config_schema),
    path("components", components_api.component_list),
    path("components/<str:kind>", components_api.component_detail),
    path("components/<str:kind>/versions/<int:version>", components_api.version_detail),
    path("endpoints", endpoints_api.endpoint_list),
    path("endpoints/<str:name>", endpoints_api.endpoint_detail),
    path("endpoints/<str:name>/keys", endpoints_api.endpoint_keys),
    path("endpoints/<str:name>/score", endpoints_api.endpoint_score),
    path("tokens", tokens_api.token_list),
    path("tokens/<int:pk>", tokens_api.token_detail),
    path("runs", api.run_list),
    path("runs/compare", compare.runs_compare),
    path("runs/<int:pk>", api.run_detail),
    path("runs/<int:pk>/cancel", api.run_cancel),
    path("runs/<int:pk>/events", api.run_events),
    path("runs/<int:pk>/nodes/<str:node_id>/log", api.node_log),
    path("runs/<int:pk>/nodes/<str:node_id>/files", api.node_files),
    path("runs/<int:pk>/nodes/<str:node_id>/files/<str:area>/<path:path>", api.node_file_download),
]

urlpatterns = [
    path("admin/", admin.site.urls),
    # the sign-in page says when repeated failures lock it (django-axes)
    path("accounts/login/", LoginView.as_view(extra_context={
        "failure_limit": settings.AXES_FAILURE_LIMIT, "cooloff_minutes": settings.AXES_COOLOFF_MINUTES}), name="login"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("api/", include(api_patterns)),
    # the API described (designer/pipelines/openapi.py): the OpenAPI document and a page to read it
    path("api/openapi.json", openapi.document_view(api_patterns), name="openapi"),
    path("api/docs", openapi.docs_page(api_patterns), name="api_docs"),
    path("account/tokens/", token_views.token_page, name="api_tokens"),
    path("account/tokens/<int:pk>/revoke", token_views.token_revoke, name="api_token_revoke"),
    path("", views.home, name="home"),
    path("pipelines/new", views.pipeline_new, name="pipeline_new"),
    path("compute", views.compute, name="compute"),
    path("jobs/", job_views.jobs, name="jobs"),
    path("sweeps/", sweep_views.sweep_list, name="sweeps"),
    path("sweeps/<int:pk>/", sweep_views.sweep_page, name="sweep"),
    path("runs/compare", sweep_views.compare_page, name="compare_runs"),
    path("runs/delete", views.runs_delete, name="runs_delete"),
    path("runs/<int:pk>/open", views.run_open, name="run_open"),
    path("data/", data_views.data_list, name="data"),
    path("data/versions/<int:pk>/delete", data_views.version_delete, name="dataset_version_delete"),
    path("data/versions/<int:pk>/preview/<int:index>", data_views.version_preview, name="dataset_version_preview"),
    path("data/<path:name>/", data_views.data_page, name="dataset"),
    path("models/", registry_views.model_list, name="models"),
    path("models/<str:name>/", registry_views.model_page, name="model"),
    path("endpoints/", endpoint_views.endpoint_list, name="endpoints"),
    path("components/", component_views.component_list, name="components"),
    path("endpoints/<str:name>/", endpoint_views.endpoint_page, name="endpoint"),
    path("pipelines/import", views.pipeline_import, name="pipeline_import"),
    path("pipelines/<int:pk>/", views.designer, name="designer"),
    path("pipelines/<int:pk>/rename", views.pipeline_rename, name="pipeline_rename"),
    path("pipelines/<int:pk>/clone", views.pipeline_clone, name="pipeline_clone"),
    path("pipelines/<int:pk>/delete", views.pipeline_delete, name="pipeline_delete"),
    path("pipelines/<int:pk>/pane", views.node_pane, name="node_pane"),
    path("runs/<int:pk>/nodes/<str:node_id>/visualize", views.node_visualize, name="node_visualize"),
    path("runs/<int:pk>/nodes/<str:node_id>/images/<str:port>/<int:index>", views.node_image, name="node_image"),
]
