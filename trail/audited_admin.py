"""An admin that records each change and delete an operator makes, in the admin's transaction.

Quotas (capacity.admin), shares and pool policies (policy.admin) are the operators' to set in the
admin; what they change there is recorded as the API's writes are (trail.record).
"""

from django.contrib import admin
from django.db import transaction

from trail.record import record


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
