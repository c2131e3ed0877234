"""Admin for inventory: devices and labels inline on their node; teams' changes in the audit."""

from django.contrib import admin
from simple_history.admin import SimpleHistoryAdmin

from trail.audited_admin import AuditedAdmin
from trail.record import record

from .models import (
    Device,
    DeviceLink,
    Node,
    NodeCondition,
    NodeImageCache,
    NodeLabel,
    NodeRefusal,
    NodeReport,
    NodeResource,
    NodeTaint,
    Pool,
    Site,
    Tenant,
)
from .teams import membership, team_values


@admin.register(Tenant)
class TenantAdmin(AuditedAdmin):
    """Teams; each create, change, delete and membership change is recorded as the team page's are."""

    list_display = ["slug", "name"]
    search_fields = ["slug", "name"]
    filter_horizontal = ["users"]
    audit_kind, audit_create = "team", True

    def audit_object(self, obj) -> str:
        return f"tenant:{obj.slug}"

    def audit_values(self, obj) -> dict:
        return team_values(obj)

    def save_model(self, request, obj, form, change):
        request._berth_members_before = set(obj.users.values_list("username", flat=True)) if change else set()
        super().save_model(request, obj, form, change)

    def save_related(self, request, form, formsets, change):
        super().save_related(request, form, formsets, change)  # the team's own change first
        tenant = form.instance
        before = getattr(request, "_berth_members_before", set())
        after = set(tenant.users.values_list("username", flat=True))
        for username in sorted(after - before):
            record(
                "membership.add",
                membership(tenant.slug, username),
                after={"tenant": tenant.slug, "user": username},
            )
        for username in sorted(before - after):
            record(
                "membership.remove",
                membership(tenant.slug, username),
                before={"tenant": tenant.slug, "user": username},
            )


@admin.register(Site)
class SiteAdmin(admin.ModelAdmin):
    list_display = ["slug", "name"]
    search_fields = ["slug", "name"]


@admin.register(Pool)
class PoolAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "site", "archived", "owner_tenant"]
    list_filter = ["site", "archived"]
    search_fields = ["slug", "name"]
    filter_horizontal = ["tenants"]


class DeviceInline(admin.TabularInline):
    model = Device
    fk_name = "node"
    fields = [
        "uuid", "device_class", "index", "parent", "numa_node", "healthy", "bookable", "verified", "attributes"
    ]  # fmt: skip
    raw_id_fields = ["parent"]
    extra = 0


class NodeLabelInline(admin.TabularInline):
    model = NodeLabel
    extra = 0


class NodeTaintInline(admin.TabularInline):
    model = NodeTaint
    extra = 0


class NodeConditionInline(admin.TabularInline):
    model = NodeCondition
    extra = 0
    readonly_fields = ["last_transition_at"]


class NodeResourceInline(admin.TabularInline):
    model = NodeResource
    extra = 0


@admin.register(Node)
class NodeAdmin(SimpleHistoryAdmin):
    list_display = [
        "name",
        "pool",
        "role",
        "provision_state",
        "connectivity",
        "maintenance",
        "cordoned",
        "owner_tenant",
        "no_schedule_reasons",
    ]
    list_filter = ["pool", "role", "provision_state", "connectivity", "trust", "maintenance", "cordoned"]
    search_fields = ["name", "labels__value"]
    list_select_related = ["pool", "owner_tenant"]
    readonly_fields = ["no_schedule_reasons", "created_at", "updated_at"]
    inlines = [NodeLabelInline, NodeTaintInline, NodeConditionInline, NodeResourceInline, DeviceInline]


@admin.register(NodeLabel)
class NodeLabelAdmin(SimpleHistoryAdmin):
    list_display = ["node", "key", "value", "source"]
    list_filter = ["source"]
    search_fields = ["node__name", "key", "value"]
    list_select_related = ["node"]
    raw_id_fields = ["node"]


@admin.register(NodeTaint)
class NodeTaintAdmin(SimpleHistoryAdmin):
    list_display = ["node", "key", "value", "effect"]
    list_filter = ["effect"]
    search_fields = ["node__name", "key", "value"]
    list_select_related = ["node"]
    raw_id_fields = ["node"]


@admin.register(NodeCondition)
class NodeConditionAdmin(admin.ModelAdmin):
    list_display = ["node", "type", "status", "reason", "last_transition_at"]
    list_filter = ["type", "status"]
    search_fields = ["node__name", "type", "reason"]
    list_select_related = ["node"]
    raw_id_fields = ["node"]


@admin.register(NodeResource)
class NodeResourceAdmin(admin.ModelAdmin):
    list_display = ["node", "resource", "allocatable", "ratio"]
    list_filter = ["resource"]
    search_fields = ["node__name", "resource"]
    list_select_related = ["node"]
    raw_id_fields = ["node"]


@admin.register(NodeImageCache)
class NodeImageCacheAdmin(admin.ModelAdmin):
    list_display = ["node", "image", "state"]
    list_filter = ["state"]
    search_fields = ["node__name", "image"]
    list_select_related = ["node"]
    raw_id_fields = ["node"]


@admin.register(Device)
class DeviceAdmin(admin.ModelAdmin):
    list_display = [
        "uuid", "node", "device_class", "index", "parent", "numa_node", "healthy", "bookable", "verified"
    ]  # fmt: skip
    # `verified`: hardware a node reported after its first report waits for an operator (and must
    # then be made bookable too: the database refuses an unverified bookable device).
    list_filter = ["device_class", "healthy", "bookable", "verified", "node__pool"]
    search_fields = ["uuid", "node__name"]
    list_select_related = ["node", "parent"]
    raw_id_fields = ["node", "parent"]


@admin.register(DeviceLink)
class DeviceLinkAdmin(admin.ModelAdmin):
    list_display = ["node", "device_a", "device_b", "rank", "nvlinks"]
    list_filter = ["rank"]
    search_fields = ["node__name", "device_a__uuid", "device_b__uuid"]
    list_select_related = ["node", "device_a", "device_b"]
    raw_id_fields = ["node", "device_a", "device_b"]


@admin.register(NodeRefusal)
class NodeRefusalAdmin(admin.ModelAdmin):
    """Each node's last refused report: written after the refusal, read here."""

    list_display = ["node", "at", "code", "by"]
    search_fields = ["node__name", "by", "message"]
    readonly_fields = ["node", "at", "code", "message", "by"]

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(NodeReport)
class NodeReportAdmin(admin.ModelAdmin):
    """When each node last reported and by whom: written by reports, read here."""

    list_display = ["node", "at", "by", "agent_at"]
    search_fields = ["node__name", "by"]
    readonly_fields = ["node", "at", "by", "agent_at"]

    def has_add_permission(self, request, obj=None) -> bool:
        return False
