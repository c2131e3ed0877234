"""Admin for the pool's rules: shares, pool policies and quotas, set here as through the API and recorded."""

from django import forms
from django.contrib import admin, messages

from capacity.port import CapacityError, Quota, duration_text
from trail.audited_admin import AuditedAdmin

from .models import PoolPolicy, PoolShare
from .outside_check import new_secret
from .pool_policy import FIELDS as POLICY_FIELDS
from .pool_policy import parse_policy, row_body
from .quotas import without_gpu_quota
from .shares import SHARE_FIELDS, check_guarantees, set_share


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


@admin.register(Quota)
class QuotaAdmin(AuditedAdmin):
    """Operators set a team's limits here as on its page (policy.quotas); the rows are capacity's."""

    list_display = ["tenant", "resource", "limit"]
    list_filter = ["resource"]
    search_fields = ["tenant__slug", "resource"]
    audit_kind = "quota"

    def audit_object(self, obj) -> str:
        return f"quota:{obj.tenant.slug}/{obj.resource}"

    def audit_values(self, obj) -> dict:
        return {"limit": obj.limit}
