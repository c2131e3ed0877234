"""A pool's policy: how long a booking may sit idle, whether owners may keep theirs, what spot work may do."""

from datetime import timedelta

from django.db import models
from django.db.models import Q

from inventory.models import Pool


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
        constraints = [
            models.CheckConstraint(
                condition=Q(idle_warn_after__isnull=True) | Q(idle_warn_after__gt=timedelta(0)),
                name="poolpolicy_idle_warn_positive",
                violation_error_message="idleWarnAfter must be more than 0.",
            ),
            models.CheckConstraint(
                condition=Q(idle_release_after__isnull=True) | Q(idle_release_after__gt=timedelta(0)),
                name="poolpolicy_idle_release_positive",
                violation_error_message="idleReleaseAfter must be more than 0.",
            ),
            models.CheckConstraint(
                condition=Q(spot_notice__isnull=True) | Q(spot_notice__gt=timedelta(0)),
                name="poolpolicy_spot_notice_positive",
                violation_error_message="spotNotice must be more than 0.",
            ),
            models.CheckConstraint(
                condition=Q(spot_min_runtime__isnull=True) | Q(spot_min_runtime__gt=timedelta(0)),
                name="poolpolicy_spot_min_runtime_positive",
                violation_error_message="spotMinRuntime must be more than 0.",
            ),
            models.CheckConstraint(
                condition=Q(max_duration__isnull=True) | Q(max_duration__gt=timedelta(0)),
                name="poolpolicy_max_duration_positive",
                violation_error_message="maxDuration must be more than 0.",
            ),
            models.CheckConstraint(
                condition=Q(max_lead_time__isnull=True) | Q(max_lead_time__gt=timedelta(0)),
                name="poolpolicy_max_lead_time_positive",
                violation_error_message="maxLeadTime must be more than 0.",
            ),
            models.CheckConstraint(
                condition=Q(max_future_gpu_hours__isnull=True) | Q(max_future_gpu_hours__gt=0),
                name="poolpolicy_max_future_gpu_hours_positive",
                violation_error_message="maxFutureGpuHours must be more than 0.",
            ),
        ]

    def __str__(self) -> str:
        return f"policy of {self.pool}"
