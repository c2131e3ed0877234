"""A pool's policy: how long a booking may sit idle, whether owners may keep theirs, what spot work may do."""

from datetime import timedelta

from django.db import models
from django.db.models import Q

from inventory.models import Pool


def _positive(field: str, api_name: str) -> models.CheckConstraint:
    """Return the constraint that a policy field, when set, is more than 0 (a duration or a count)."""
    zero = 0 if field == "max_future_gpu_hours" else timedelta(0)
    return models.CheckConstraint(
        condition=Q(**{f"{field}__isnull": True}) | Q(**{f"{field}__gt": zero}),
        name=f"poolpolicy_{field.removesuffix('_after')}_positive",
        violation_error_message=f"{api_name} must be more than 0.",
    )


class PoolPolicy(models.Model):
    """One pool's policy (docs/policy.md): every field nullable or defaulted, one row per pool.

    No row: the defaults, which are the site's settings (IDLE_AFTER, IDLE_RELEASE_AFTER) and
    today's behaviour. The row is created on the first write, from those defaults, and a PUT
    changes only the fields it names. A null duration is off: `idle_warn_after` null marks nothing
    idle in the pool (so nothing is released for idleness either). `spot_notice` and
    `spot_min_runtime` are read by preemption (capacity.placers.notice); `lend_idle` is stored and
    shown, read by placement in a later part. The booking limits (`max_duration`, `max_lead_time`,
    `max_future_gpu_hours`; null: no limit) are read with the pool's lookup (capacity.placers.loader)
    and checked by capacity.services.limits.
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
            )
        ]

    def __str__(self) -> str:
        return f"policy of {self.pool}"
