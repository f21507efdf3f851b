from django.contrib import admin

from designer.pipelines.models import Dataset, Event, NodeRun, Pipeline, Run, Worker


@admin.register(Pipeline)
class PipelineAdmin(admin.ModelAdmin):
    list_display = ("name", "owner", "revision", "updated_at")
    list_filter = ("owner",)
    search_fields = ("name",)


class NodeRunInline(admin.TabularInline):
    model = NodeRun
    extra = 0
    fields = ("node_id", "kind", "status", "started_at", "finished_at", "worker", "error")
    readonly_fields = fields


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ("id", "name", "owner", "status", "submitted_at", "finished_at")
    list_filter = ("status", "owner")
    inlines = [NodeRunInline]


@admin.register(NodeRun)
class NodeRunAdmin(admin.ModelAdmin):
    list_display = ("node_id", "kind", "run", "status", "started_at", "finished_at", "worker")
    list_filter = ("status", "kind")


@admin.register(Event)
class EventAdmin(admin.ModelAdmin):
    list_display = ("id", "run", "node_id", "type", "created_at")
    list_filter = ("type",)


@admin.register(Worker)
class WorkerAdmin(admin.ModelAdmin):
    list_display = ("hostname", "machine", "cpus", "gpus", "concurrency", "last_seen", "stopped_at")


@admin.register(Dataset)
class DatasetAdmin(admin.ModelAdmin):
    list_display = ("name", "owner", "size", "created_at")
    list_filter = ("owner",)
    search_fields = ("name",)
