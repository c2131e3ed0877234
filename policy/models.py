"""The pool rules' own rows: a pool's policy and the tenants' shares of a pool (docs/policy.md, docs/shares.md).

Moved from capacity (migrations capacity 0045, policy 0001) with their tables kept: capacity's
booking path reads them by table name (capacity_poolpolicy, capacity_poolshare) and never imports
this app.
"""

from datetime import timedelta

from django.db import models
from django.db.models import Q

from capacity.port import APPROVAL_HOLD
from inventory.models import Pool, Tenant


def _positive(field: str, api_name: str) -> models.CheckConstraint:
    """Return the constraint that a policy field, when set, is more than 0 (a duration or a count)."""
    zero = 0 if field.endswith(("_gpu_hours", "_concurrency")) else timedelta(0)
    return models.CheckConstraint(
        condition=Q(**{f"{field}__isnull": True}) | Q(**{f"{field}__gt": zero}),
        name=f"poolpolicy_{field.removesuffix('_after')}_positive",
        violation_error_message=f"{api_name} must be more than 0.",
    )


class OnError(models.TextChoices):
    """What the outside check's failure (no answer, or not 2xx nor 403) does to a booking."""

    ALLOW = "allow"
    DENY = "deny"


class PoolPolicy(models.Model):
    """One pool's policy (docs/policy.md): every field nullable or defaulted, one row per pool.

    No row: the defaults, which are the site's settings (IDLE_AFTER, IDLE_RELEASE_AFTER) and
    today's behaviour. The row is created on the first write, from those defaults, and a PUT
    changes only the fields it names. A null duration is off: `idle_warn_after` null marks nothing
    idle in the pool (so nothing is released for idleness either). `spot_notice` and
    `spot_min_runtime` are read by preemption (capacity.placers.notice); `lend_idle` by spot
    placement, which lends idle booked GPUs (policy.lending). The booking limits (`max_duration`, `max_lead_time`,
    `max_future_gpu_hours`; null: no limit) are read with the pool's lookup (capacity.placers.loader)
    and checked by the pool rules in policy.limits. Approvals (`approval_above_gpu_hours`, null: none
    needed; `approval_hold`) are policy.approval (the hold), policy.approvals (deciding, and the
    hold's end: its worker job); the outside check (`policy_webhook`,
    its secret and `policy_webhook_on_error`) policy.outside_check.
    """

    pool = models.OneToOneField(Pool, on_delete=models.CASCADE, related_name="policy")
    idle_warn_after = models.DurationField(null=True, blank=True)
    idle_release_after = models.DurationField(null=True, blank=True)
    allow_keep_when_idle = models.BooleanField(default=True)
    lend_idle = models.BooleanField(default=False)
    spot_notice = models.DurationField(null=True, blank=True)
    spot_min_runtime = models.DurationField(null=True, blank=True)
    max_duration = models.DurationField(null=True, blank=True)
    max_lead_time = models.DurationField(null=True, blank=True)
    max_future_gpu_hours = models.PositiveIntegerField(null=True, blank=True)
    # Approvals (docs/policy.md, Approvals): a booking of more whole-GPU-hours is placed but waits
    # for an operator (condition AwaitingApproval), released when none decided within approval_hold.
    approval_above_gpu_hours = models.PositiveIntegerField(null=True, blank=True)
    approval_hold = models.DurationField(default=APPROVAL_HOLD)
    # The outside check (docs/policy.md, Outside check): called on every create, signed with the
    # secret (Standard Webhooks), before any lock; on no usable answer, on_error decides.
    policy_webhook = models.URLField(max_length=2000, null=True, blank=True)
    policy_webhook_secret = models.CharField(max_length=100, blank=True, default="")
    policy_webhook_on_error = models.CharField(max_length=5, choices=OnError, default=OnError.DENY)
    # The most of the pool's creates waiting on its check at once in a web process (policy.check_cap).
    policy_webhook_concurrency = models.PositiveIntegerField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "capacity_poolpolicy"  # kept from capacity: its booking path reads it by name
        ordering = ["pool"]
        verbose_name_plural = "pool policies"
        # Each limit, when set, is more than 0: (field, its API name).
        constraints = [
            _positive(field, api_name)
            for field, api_name in (
                ("idle_warn_after", "idleWarnAfter"),
                ("idle_release_after", "idleReleaseAfter"),
                ("spot_notice", "spotNotice"),
                ("spot_min_runtime", "spotMinRuntime"),
                ("max_duration", "maxDuration"),
                ("max_lead_time", "maxLeadTime"),
                ("max_future_gpu_hours", "maxFutureGpuHours"),
                ("approval_above_gpu_hours", "approvalAboveGpuHours"),
                ("approval_hold", "approvalHold"),
                ("policy_webhook_concurrency", "policyWebhookConcurrency"),
            )
        ] + [
            models.CheckConstraint(
                condition=Q(policy_webhook_on_error__in=OnError.values),
                name="poolpolicy_on_error_known",
                violation_error_message="policyWebhookOnError must be allow or deny.",
            )
        ]

    def __str__(self) -> str:
        return f"policy of {self.pool}"


class PoolShare(models.Model):
    """A tenant's share of a pool: what it is guaranteed, may borrow and lends, in whole GPUs.

    Whole-GPU equivalents: a MIG slice counts as its share of its GPU (inventory.gpu_share).
    `borrowing_limit_gpus` null: no limit on borrowing; `lending_limit_gpus` null: all of the
    guarantee may be lent. A pool without rows has no shares and places as before; once it has
    some, a tenant without a row is guaranteed 0. The guarantees of a pool add up to at most its
    bookable GPUs (policy.shares checks it under the pool's lock).
    """

    pool = models.ForeignKey(Pool, on_delete=models.CASCADE, related_name="shares")
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="pool_shares")
    guaranteed_gpus = models.IntegerField()
    borrowing_limit_gpus = models.IntegerField(null=True, blank=True)
    lending_limit_gpus = models.IntegerField(null=True, blank=True)

    class Meta:
        db_table = "capacity_poolshare"  # kept from capacity: its booking path reads it by name
        ordering = ["pool", "tenant"]
        constraints = [
            models.UniqueConstraint(
                fields=["pool", "tenant"],
                name="poolshare_unique",
                violation_error_message="The tenant already has a share of this pool.",
            ),
            models.CheckConstraint(
                condition=Q(guaranteed_gpus__gte=0),
                name="poolshare_guaranteed_nonnegative",
                violation_error_message="A guarantee cannot be negative.",
            ),
            models.CheckConstraint(
                condition=Q(borrowing_limit_gpus__isnull=True) | Q(borrowing_limit_gpus__gte=0),
                name="poolshare_borrowing_nonnegative",
                violation_error_message="A borrowing limit cannot be negative.",
            ),
            models.CheckConstraint(
                condition=Q(lending_limit_gpus__isnull=True) | Q(lending_limit_gpus__gte=0),
                name="poolshare_lending_nonnegative",
                violation_error_message="A lending limit cannot be negative.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.pool}:{self.tenant}={self.guaranteed_gpus}"
