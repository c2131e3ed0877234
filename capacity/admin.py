"""Admin for capacity: what the placer and quota maintain is read-only here.

A reservation, allocation or booking added, changed or deleted here would bypass the placer, quota
and the release path (its charges, the EXCLUDE constraint's partner rows): they are made and ended
through the pages, the API, the CLI and the port. Quotas are the operators' to set.
"""

from django import forms
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
    PoolPolicy,
    PoolShare,
    Quota,
    QuotaCharge,
    Reservation,
    ScalarClaim,
    Series,
)
from .models.tokens import token_expiry, token_revoked_at
from .placement import CapacityError
from .services.inputs import duration_text
from .services.outside_check import new_secret
from .services.pool_policy import FIELDS as POLICY_FIELDS
from .services.pool_policy import parse_policy, row_body
from .services.quotas import without_gpu_quota
from .services.shares import SHARE_FIELDS, check_guarantees, set_share
from .services.tokens import issue_node_token, node_key_works, replaced_key_note, revoke_token


class ReadOnlyAdmin(admin.ModelAdmin):
    """Show rows and their history; add, change and delete nothing."""

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


class AuditedAdmin(admin.ModelAdmin):
    """Record each change and delete an operator makes here, in the admin's transaction (trail)."""

    audit_kind = ""  # quota, share, policy: the action's and object's first part

    def audit_object(self, obj) -> str:
        raise NotImplementedError

    def audit_values(self, obj) -> dict:
        raise NotImplementedError

    def save_model(self, request, obj, form, change):
        before = self.audit_values(type(obj).objects.get(pk=obj.pk)) if change else None
        super().save_model(request, obj, form, change)
        after = self.audit_values(obj)
        if before is not None:  # what changed, alone
            changed = [name for name in after if before.get(name) != after[name]]
            before, after = {n: before.get(n) for n in changed}, {n: after[n] for n in changed}
        if after:
            record(f"{self.audit_kind}.set", self.audit_object(obj), before=before, after=after)

    def delete_model(self, request, obj):
        record(f"{self.audit_kind}.delete", self.audit_object(obj), before=self.audit_values(obj))
        super().delete_model(request, obj)

    def delete_queryset(self, request, queryset):
        # The admin's "delete selected" deletes in bulk (no signal): each row is recorded first.
        with transaction.atomic():
            for obj in queryset:
                record(f"{self.audit_kind}.delete", self.audit_object(obj), before=self.audit_values(obj))
            super().delete_queryset(request, queryset)


@admin.register(Quota)
class QuotaAdmin(AuditedAdmin):
    list_display = ["tenant", "resource", "limit"]
    list_filter = ["resource"]
    search_fields = ["tenant__slug", "resource"]
    audit_kind = "quota"

    def audit_object(self, obj) -> str:
        return f"quota:{obj.tenant.slug}/{obj.resource}"

    def audit_values(self, obj) -> dict:
        return {"limit": obj.limit}


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


class PoolShareForm(forms.ModelForm):
    """Refuse here what the API refuses: guarantees past the pool's bookable GPUs."""

    class Meta:
        model = PoolShare
        fields = ["pool", "tenant", "guaranteed_gpus", "borrowing_limit_gpus", "lending_limit_gpus"]

    def clean(self):
        data = super().clean()
        if data.get("pool") and data.get("tenant") and data.get("guaranteed_gpus") is not None:
            try:
                check_guarantees(data["pool"], data["tenant"], data["guaranteed_gpus"])
            except CapacityError as err:
                raise forms.ValidationError(err.message) from None
        return data


@admin.register(PoolShare)
class PoolShareAdmin(AuditedAdmin):
    """Operators set shares here as through the API; the pool's guarantees stay within its GPUs."""

    form = PoolShareForm
    list_display = ("pool", "tenant", "guaranteed_gpus", "borrowing_limit_gpus", "lending_limit_gpus")
    list_filter = ("pool",)
    search_fields = ("tenant__slug", "pool__slug")
    audit_kind = "share"  # saved through set_share, which records; deletes recorded here

    def audit_object(self, obj) -> str:
        return f"share:{obj.pool.slug}/{obj.tenant.slug}"

    def audit_values(self, obj) -> dict:
        return {name: getattr(obj, name) for name in SHARE_FIELDS}

    def save_model(self, request, obj, form, change):
        # Through the service: under the pool's lock the sum is checked again (a concurrent writer).
        try:
            share = set_share(
                obj.pool.slug,
                obj.tenant.slug,
                obj.guaranteed_gpus,
                obj.borrowing_limit_gpus,
                obj.lending_limit_gpus,
            )
        except CapacityError as err:
            self.message_user(request, str(err), messages.ERROR)
            return
        obj.pk = share.pk  # the admin's own message links the row
        if without_gpu_quota([obj.tenant_id]):
            self.message_user(
                request,
                # Words first: the admin capitalises a message's first letter.
                f"No GPU quota for {obj.tenant.slug}: its bookings are refused whatever its share says."
                f" Set one on the team's page, Teams → {obj.tenant.slug}.",
                messages.WARNING,
            )


_POLICY_DURATIONS = {
    attr: name for name, (attr, kind) in POLICY_FIELDS.items() if kind in ("duration", "hold")
}


class PoolPolicyForm(forms.ModelForm):
    """Durations as the API writes them (2h; blank: off), checked by the API's own parser."""

    class Meta:
        model = PoolPolicy
        fields = ["pool", *(attr for attr, _ in POLICY_FIELDS.values())]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for attr in _POLICY_DURATIONS:
            value = getattr(self.instance, attr) if self.instance.pk else None
            self.initial[attr] = duration_text(value) if value else ""
            self.fields[attr] = forms.CharField(
                required=False,
                help_text="30m, 2h, 3d or 2w; blank: " + ("24h" if attr == "approval_hold" else "off"),
                label=self.fields[attr].label,
            )
        self.fields["policy_webhook_on_error"].required = False

    def clean(self):
        data = super().clean()
        data["policy_webhook_on_error"] = data.get("policy_webhook_on_error") or "deny"
        url = (data.get("policy_webhook") or "").strip() or None
        try:
            data.update(parse_policy({"policyWebhook": url}))  # checked as webhook URLs are
        except CapacityError as err:
            self.add_error("policy_webhook", err.message)
        for attr, name in _POLICY_DURATIONS.items():
            text = (data.get(attr) or "").strip() or None
            if attr == "approval_hold":
                text = text or "24h"  # it cannot be off
            try:
                data.update(parse_policy({name: text}))
            except CapacityError as err:
                data[attr] = None  # the model's constraints are checked next: not on the text
                self.add_error(attr, err.message)
        return data


@admin.register(PoolPolicy)
class PoolPolicyAdmin(AuditedAdmin):
    """Operators change a pool's policy here as through the API (docs/policy.md)."""

    form = PoolPolicyForm

    def save_model(self, request, obj, form, change):
        # An outside check set here gets a secret as the API's PUT makes one; the admin never shows
        # it: an operator sets a known one with PUT {"policyWebhookSecret"} (docs/policy.md).
        if obj.policy_webhook and not obj.policy_webhook_secret:
            obj.policy_webhook_secret = new_secret()
        super().save_model(request, obj, form, change)

    list_display = ("pool", "idle_warn_after", "idle_release_after", "allow_keep_when_idle", "lend_idle")
    search_fields = ("pool__slug",)
    audit_kind = "policy"

    def audit_object(self, obj) -> str:
        return f"policy:{obj.pool.slug}"

    def audit_values(self, obj) -> dict:
        return row_body(obj)


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
