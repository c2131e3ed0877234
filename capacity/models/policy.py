"""A pool's policy: idle rules, what spot work may do, booking limits, approvals and the outside check."""

from datetime import timedelta

from django.db import models
from django.db.models import Q

from inventory.models import Pool


def _positive(field: str, api_name: str) -> models.CheckConstraint:
    """Return the constraint that a policy field, when set, is more than 0 (a duration or a count)."""
    zero = 0 if field.endswith(("_gpu_hours", "_concurrency")) else timedelta(0)
    return models.CheckConstraint(
        condition=Q(**{f"{field}__isnull": True}) | Q(**{f"{field}__gt": zero}),
        name=f"poolpolicy_{field.removesuffix('_after')}_positive",
        violation_error_message=f"{api_name} must be more than 0.",
    )


APPROVAL_HOLD = timedelta(hours=24)


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


class PoolRule(models.Model):
    """A pool rule an app outside the pool's policy turned on for a pool (the Slurm bridge's `slurm`).

    The pool's lookup reads the names with the pool (capacity.placers.loader, PoolRow.rules), so a
    rule's `applies` costs no statement, and a pool without any runs none of them.
    """

    pool = models.ForeignKey(Pool, on_delete=models.CASCADE, related_name="+")
    rule = models.CharField(max_length=50)

    class Meta:
        ordering = ["pool", "rule"]
        constraints = [
            models.UniqueConstraint(
                fields=["pool", "rule"],
                name="poolrule_once",
                violation_error_message="A rule is on for a pool once.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.pool_id}:{self.rule}"


def switch_rule(pool_pk: int, rule: str, on: bool) -> None:
    """Turn a rule on or off for a pool (the next lookup of the pool reads it)."""
    if on:
        PoolRule.objects.get_or_create(pool_id=pool_pk, rule=rule)
    else:
        PoolRule.objects.filter(pool_id=pool_pk, rule=rule).delete()
