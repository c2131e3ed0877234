from django.db import models
from django.db.models import Q

from inventory.models import Tenant


class Quota(models.Model):
    """The most a tenant may hold at once of one resource (a device class such as `gpu`, or `vcpu`)."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="quotas")
    resource = models.CharField(max_length=100)
    limit = models.BigIntegerField()

    class Meta:
        ordering = ["tenant", "resource"]
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "resource"],
                name="quota_unique",
                violation_error_message="The tenant already has a quota for this resource.",
            ),
            models.CheckConstraint(
                condition=Q(limit__gte=0),
                name="quota_limit_nonnegative",
                violation_error_message="A quota limit cannot be negative.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.tenant}:{self.resource}≤{self.limit}"


class QuotaUsage(models.Model):
    """What a tenant holds of one resource; charged before placement, refunded before release."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="quota_usage")
    resource = models.CharField(max_length=100)
    used = models.BigIntegerField(default=0)

    class Meta:
        ordering = ["tenant", "resource"]
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "resource"],
                name="quotausage_unique",
                violation_error_message="The tenant already has a usage row for this resource.",
            ),
            models.CheckConstraint(
                condition=Q(used__gte=0),
                name="quotausage_used_nonnegative",
                violation_error_message="Quota usage cannot be negative.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.tenant}:{self.resource}={self.used}"
