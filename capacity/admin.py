"""Admin for capacity: what the placer and quota maintain is read-only here.

A reservation, allocation or booking added, changed or deleted here would bypass the placer, quota
and the release path (its charges, the EXCLUDE constraint's partner rows): they are made and ended
through the pages, the API, the CLI and the port. Quotas are the operators' to set, in the
policy app's admin (policy.admin).
"""

from django.contrib import admin

from .models import (
    Allocation,
    DeviceBooking,
    MaintenanceWindow,
    MaintenanceWindowNode,
    PoolCapacityRollup,
    QuotaCharge,
    Reservation,
    ScalarClaim,
)


class ReadOnlyAdmin(admin.ModelAdmin):
    """Show rows and their history; add, change and delete nothing."""

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(QuotaCharge)
class QuotaChargeAdmin(ReadOnlyAdmin):
    list_display = ["tenant", "resource", "amount", "during", "reservation"]
    list_filter = ["resource"]
    search_fields = ["tenant__slug", "resource"]
    readonly_fields = ["tenant", "reservation", "resource", "amount", "during"]


@admin.register(ScalarClaim)
class ScalarClaimAdmin(ReadOnlyAdmin):
    list_display = ["node", "resource", "amount", "during", "allocation"]
    list_filter = ["resource"]
    search_fields = ["node__name", "resource"]
    readonly_fields = ["allocation", "node", "resource", "amount", "during"]


class AllocationInline(admin.TabularInline):
    model = Allocation
    extra = 0
    can_delete = False
    fields = ["node", "starts_at", "ends_at", "resources", "released_at"]
    readonly_fields = fields


@admin.register(Reservation)
class ReservationAdmin(ReadOnlyAdmin):
    list_display = [
        "id",
        "tenant",
        "pool",
        "status",
        "priority",
        "binding",
        "starts_at",
        "ends_at",
        "created_at",
    ]
    list_filter = ["status", "priority", "binding", "pool"]
    search_fields = ["id", "tenant__slug", "idempotency_key"]
    list_select_related = ["tenant", "pool"]
    readonly_fields = ["status", "conditions", "created_at", "updated_at", "released_at"]
    inlines = [AllocationInline]


class DeviceBookingInline(admin.TabularInline):
    model = DeviceBooking
    extra = 0
    can_delete = False
    fields = ["device", "during"]
    readonly_fields = fields


@admin.register(Allocation)
class AllocationAdmin(ReadOnlyAdmin):
    list_display = ["id", "node", "reservation", "instance_id", "starts_at", "ends_at", "released_at"]
    list_filter = ["node__pool"]
    search_fields = ["id", "node__name", "instance_id"]
    list_select_related = ["node", "reservation"]
    raw_id_fields = ["node", "reservation"]
    readonly_fields = ["resources", "released_at", "created_at"]
    inlines = [DeviceBookingInline]


@admin.register(DeviceBooking)
class DeviceBookingAdmin(ReadOnlyAdmin):
    list_display = ["id", "device", "allocation", "during"]
    search_fields = ["device__uuid", "device__node__name"]
    list_select_related = ["device", "allocation"]
    raw_id_fields = ["device", "allocation"]


@admin.register(PoolCapacityRollup)
class PoolCapacityRollupAdmin(ReadOnlyAdmin):
    list_display = [
        "pool",
        "device_class",
        "total",
        "excluded",
        "maintenance",
        "provisioning",
        "unreachable",
        "unhealthy",
    ]
    list_filter = ["pool", "device_class"]
    readonly_fields = [
        "pool",
        "device_class",
        "total",
        "excluded",
        "maintenance",
        "provisioning",
        "unreachable",
        "unhealthy",
        "updated_at",
    ]


class MaintenanceWindowNodeInline(admin.TabularInline):
    model = MaintenanceWindowNode
    fields = ("node", "switched")
    readonly_fields = fields
    extra = 0
    can_delete = False


@admin.register(MaintenanceWindow)
class MaintenanceWindowAdmin(ReadOnlyAdmin):
    """Windows are scheduled and deleted through the API (its checks, locks and moves); read here."""

    list_display = ("pk", "starts_at", "ends_at", "pool", "reason", "move", "started_at", "ended_at")
    list_filter = ("pool",)
    inlines = [MaintenanceWindowNodeInline]
