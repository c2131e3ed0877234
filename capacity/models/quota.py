from django.contrib.postgres.fields import DateTimeRangeField
from django.contrib.postgres.indexes import GistIndex
from django.db import models
from django.db.models import F, Func, Q, Value

from inventory.models import Tenant

from .reservations import Reservation

# A quota row for this resource is the tenant's default limit for every resource without a row.
DEFAULT_RESOURCE = "*"


class Quota(models.Model):
    """The most a tenant may hold at once of one resource (a device class such as `gpu`, or `vcpu`).

    `resource = "*"` is the tenant's default limit for every resource without a row of its own; a
    resource with neither is refused, never unlimited.
    """

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


class QuotaCharge(models.Model):
    """What one reservation holds of one quota resource over its window.

    Quota bounds the sum of a tenant's charges at any one instant, not their sum over all time:
    charged under the tenant's quota lock before placement, ended (cut short or deleted) at release.
    """

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="quota_charges")
    # Looked up through quotacharge_unique (reservation, resource): no index of its own to keep.
    reservation = models.ForeignKey(
        Reservation, on_delete=models.CASCADE, related_name="quota_charges", db_index=False
    )
    resource = models.CharField(max_length=100)
    amount = models.BigIntegerField()
    during = DateTimeRangeField()

    class Meta:
        ordering = ["tenant", "resource", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["reservation", "resource"],
                name="quotacharge_unique",
                violation_error_message="The reservation is already charged for this resource.",
            ),
            models.CheckConstraint(
                condition=Q(amount__gt=0),
                name="quotacharge_amount_positive",
                violation_error_message="A quota charge must be positive.",
            ),
            models.CheckConstraint(
                condition=Q(during__isempty=False),
                name="quotacharge_during_nonempty",
                violation_error_message="A quota charge's window cannot be empty.",
            ),
        ]
        indexes = [
            # A tenant's charges over a window: the guard's and the report's one read.
            GistIndex(
                Func(F("tenant_id"), F("tenant_id"), Value("[]"), function="int8range"),
                F("during"),
                name="quotacharge_tenant_during_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.tenant_id}:{self.resource}+{self.amount} {self.during}"


class QuotaLoad(models.Model):
    """The sum of a tenant's charges of one resource that end on one day: a cheap bound for the guard.

    Kept by statement triggers on quota charges (migration 0011), never written by Python. Every
    charge overlapping a window ends on or after the window's first day, so the loads of the days
    from then on bound what the tenant holds at any instant of the window: when that sum plus a
    request stays within the limit, the guard admits it without reading the charges themselves.
    """

    # No foreign key: a tenant's deletion deletes its charges, which the triggers subtract here.
    tenant_id = models.BigIntegerField()
    resource = models.CharField(max_length=100)
    end_day = models.IntegerField(help_text="Days since 1970-01-01 (UTC) of the charges' end.")
    amount = models.BigIntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["tenant_id", "resource", "end_day"],
                name="quotaload_unique",
                violation_error_message="The tenant already has a load for this resource and day.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.tenant_id}:{self.resource}@{self.end_day}={self.amount}"
