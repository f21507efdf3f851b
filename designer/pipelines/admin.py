from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.contrib.auth.models import Permission

from designer.engine import statuses as st
from designer.pipelines.models import Component, Dataset, Event, NodeRun, Pipeline, Run, Worker
from designer.pipelines.models.components import may_run_components
from designer.pipelines.runs import retention


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
    """Deleting a run here is the Delete run button's deletion (retention.delete): hidden at once,
    its folders removed by the workers once no other run reuses them; never a row deleted under
    a later run that reads its outputs."""

    list_display = ("id", "name", "owner", "status", "submitted_at", "finished_at")
    list_filter = ("status", "owner")
    inlines = [NodeRunInline]

    def has_delete_permission(self, request, obj=None):
        unfinished = obj is not None and obj.status not in st.RUN_FINISHED
        return super().has_delete_permission(request, obj) and not unfinished

    def get_deleted_objects(self, objs, request):
        # a run that is not over among those selected is not deleted (delete_queryset says which),
        # rather than the whole action refused
        deleted, counts, perms_needed, protected = super().get_deleted_objects(objs, request)
        if super().has_delete_permission(request):
            perms_needed.discard(Run._meta.verbose_name)
        return deleted, counts, perms_needed, protected

    def delete_model(self, request, obj):
        retention.delete(obj)

    def delete_queryset(self, request, queryset):
        deleted, refused = 0, []
        for run in queryset:
            try:
                retention.delete(run)
                deleted += 1
            except retention.CannotDelete as e:
                refused.append(str(e))
        if refused:  # instead of the action's "Successfully deleted N runs", which would count them
            request.runs_refused = True
            messages.warning(request, f"Deleted {deleted} run{'s' * (deleted != 1)}. Not deleted: {'; '.join(refused)}.")

    def message_user(self, request, message, level=messages.INFO, *args, **kwargs):
        if not (getattr(request, "runs_refused", False) and level == messages.SUCCESS):
            super().message_user(request, message, level, *args, **kwargs)


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
    list_display = ("name", "version", "owner", "size", "created_at")
    list_filter = ("owner",)
    search_fields = ("name",)


@admin.register(Component)
class ComponentAdmin(admin.ModelAdmin):
    """Uploaded on the Components page (which checks and unpacks them), never added here; their
    files never change, so neither do their rows: only deleting is offered."""

    list_display = ("kind", "version", "label", "owner", "created_at")
    list_filter = ("owner",)
    search_fields = ("kind", "label")
    readonly_fields = ("owner", "kind", "version", "label", "category", "folder", "file", "digest", "declaration", "created_at")

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


# ---------------------------------------------------------------- granting the permission to add components
# Adding a component is a privilege (its command runs on the workers): Django's own permission
# pipelines.add_component, shown on a user's page ("pipelines | component | Can add component").
# The users list offers it as two actions, and says who has it.

User = get_user_model()


def _add_component_permission() -> Permission:
    return Permission.objects.get(content_type__app_label="pipelines", codename="add_component")


class DesignerUserAdmin(UserAdmin):
    list_display = (*UserAdmin.list_display, "may_add_components")
    actions = ["allow_adding_components", "withdraw_adding_components"]

    @admin.display(boolean=True, description="May add components")
    def may_add_components(self, user):
        return may_run_components(user)

    @admin.action(description="Allow the selected users to add components (their commands run on the workers)",
                  permissions=["change"])
    def allow_adding_components(self, request, queryset):
        permission = _add_component_permission()
        for user in queryset:
            user.user_permissions.add(permission)
        self.message_user(request, f"{queryset.count()} user(s) may now add components", messages.SUCCESS)

    @admin.action(description="Withdraw the permission to add components from the selected users", permissions=["change"])
    def withdraw_adding_components(self, request, queryset):
        permission = _add_component_permission()
        for user in queryset:
            user.user_permissions.remove(permission)
        self.message_user(request, f"{queryset.count()} user(s) may no longer add components (a group or superuser "
                                   "status may still allow it)", messages.SUCCESS)


if admin.site.is_registered(User):
    admin.site.unregister(User)
admin.site.register(User, DesignerUserAdmin)
