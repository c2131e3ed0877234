"""Admin for capacity: what the placer and quota maintain is read-only here.

A reservation, allocation or booking added, changed or deleted here would bypass the placer, quota
and the release path (its charges, the EXCLUDE constraint's partner rows): they are made and ended
through the pages, the API, the CLI and the port. Quotas are the operators' to set, in the
policy app's admin (policy.admin).
"""

from django.contrib import admin, messages
from django.db import transaction
from rest_framework.authtoken import admin as authtoken_admin
from rest_framework.authtoken.models import TokenProxy

from inventory.models import Node
from trail.record import record

from .models import (
    Allocation,
    DeviceBooking,
    MaintenanceWindow,
    MaintenanceWindowNode,
    PoolCapacityRollup,
    QuotaCharge,
    Reservation,
    ScalarClaim,
    Series,
)
from .models.tokens import token_expiry, token_revoked_at
from .services.tokens import issue_node_token, node_key_works, replaced_key_note, revoke_token


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


@admin.register(Series)
class SeriesAdmin(ReadOnlyAdmin):
    """Series are made through the pages, the API, the CLI and the port, and released there too."""

    list_display = ["id", "tenant", "pool", "rule", "starts_at", "all_or_nothing", "created_by", "created_at"]
    list_filter = ["pool", "all_or_nothing"]
    search_fields = ["id", "tenant__slug", "idempotency_key", "rule"]
    list_select_related = ["tenant", "pool"]


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


class TokenAdmin(authtoken_admin.TokenAdmin):
    """DRF's token admin with each token's expiry and revocation, and an action to revoke."""

    list_display = ["key", "user", "created", "expires", "revoked"]
    list_select_related = ["user", "lifetime"]
    actions = ["revoke"]

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        # In the admin's transaction; never the key.
        after = {"expiresAt": token_expiry(obj).isoformat()}
        record(
            "token.issue" if not change else "token.change", f"token:{obj.user.get_username()}", after=after
        )

    def delete_model(self, request, obj):
        record("token.delete", f"token:{obj.user.get_username()}")
        super().delete_model(request, obj)

    def delete_queryset(self, request, queryset):
        with transaction.atomic():
            for token in queryset.select_related("user"):
                record("token.delete", f"token:{token.user.get_username()}")
            super().delete_queryset(request, queryset)

    @admin.display(description="expires")
    def expires(self, token):
        return token_expiry(token)

    @admin.display(description="revoked")
    def revoked(self, token):
        return token_revoked_at(token) or "-"

    @admin.action(description="Revoke the selected tokens (they answer 401 from now on)")
    def revoke(self, request, queryset):
        tokens = list(queryset.select_related("user"))
        for token in tokens:
            revoke_token(token, by=f"{request.user.get_username()} (admin)")
        self.message_user(request, f"Revoked {len(tokens)} token{'s' if len(tokens) != 1 else ''}.")


admin.site.unregister(TokenProxy)
admin.site.register(TokenProxy, TokenAdmin)


# Node credentials are capacity's (tokens); inventory, which registers the node admin, never imports
# capacity, so the action joins the node admin from here.
MAX_NODE_CREDENTIALS = 50


@admin.action(description="Issue node credentials for the agents (each node's old key stops working)")
def issue_node_credentials(modeladmin, request, queryset):
    """Issue each selected node's own token and show the keys once, as `issue_token --node` prints them."""
    nodes = list(queryset.order_by("name")[: MAX_NODE_CREDENTIALS + 1])
    if len(nodes) > MAX_NODE_CREDENTIALS:
        modeladmin.message_user(
            request,
            f"Select at most {MAX_NODE_CREDENTIALS} nodes at a time: each key is shown once.",
            messages.ERROR,
        )
        return
    for node in nodes:
        replaced = node_key_works(node.name)
        token = issue_node_token(node.name)
        # Words first: the admin capitalises a message's first letter, which would change a key.
        modeladmin.message_user(
            request,
            f"Key for node.{node.name}: {token.key} (expires {token_expiry(token):%Y-%m-%d %H:%M} UTC); "
            f"{replaced_key_note(node.name, replaced)}",
            messages.WARNING if replaced else messages.INFO,
        )


_node_admin = type(admin.site.get_model_admin(Node))
_node_admin.actions = [*(_node_admin.actions or ()), issue_node_credentials]


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
