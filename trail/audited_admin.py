"""An admin that records each change and delete an operator makes, in the admin's transaction.

Quotas, shares and pool policies (policy.admin) are the operators' to set in the
admin; what they change there is recorded as the API's writes are (trail.record).
"""

from django.contrib import admin
from django.db import transaction

from trail.record import record


class AuditedAdmin(admin.ModelAdmin):
    """Record each change and delete an operator makes here, in the admin's transaction (trail).

    The change is recorded once the form's many-to-many fields are saved too (save_related), so a
    user's groups or a group's permissions are in it. An admin whose save_model does not call this
    one's (it saves through a service that records) records nothing here.
    """

    audit_kind = ""  # quota, share, policy, user, group: the action's and object's first part
    audit_create = False  # a new row is `KIND.create` (else `KIND.set`, as quotas, shares and policies)

    def audit_object(self, obj) -> str:
        raise NotImplementedError

    def audit_values(self, obj) -> dict:
        raise NotImplementedError

    def save_model(self, request, obj, form, change):
        request._berth_audit_before = self.audit_values(type(obj).objects.get(pk=obj.pk)) if change else None
        super().save_model(request, obj, form, change)

    def save_related(self, request, form, formsets, change):
        super().save_related(request, form, formsets, change)
        if not hasattr(request, "_berth_audit_before"):
            return
        before, obj = request.__dict__.pop("_berth_audit_before"), form.instance
        after, action = self.audit_values(obj), "set"
        if before is not None:  # what changed, alone
            changed = [name for name in after if before.get(name) != after[name]]
            before, after = {n: before.get(n) for n in changed}, {n: after[n] for n in changed}
        elif self.audit_create:
            action = "create"
        if after:
            record(f"{self.audit_kind}.{action}", self.audit_object(obj), before=before, after=after)

    def delete_model(self, request, obj):
        record(f"{self.audit_kind}.delete", self.audit_object(obj), before=self.audit_values(obj))
        super().delete_model(request, obj)

    def delete_queryset(self, request, queryset):
        # The admin's "delete selected" deletes in bulk (no signal): each row is recorded first.
        with transaction.atomic():
            for obj in queryset:
                record(f"{self.audit_kind}.delete", self.audit_object(obj), before=self.audit_values(obj))
            super().delete_queryset(request, queryset)
