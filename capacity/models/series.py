"""A series: one recurrence rule over a first window, each occurrence a reservation of its own."""

from django.db import models
from django.db.models import Q

from inventory.models import Pool, Tenant


class Series(models.Model):
    """A tenant's recurring booking (docs/series.md): the rule, its first window, who made it.

    Each occurrence is a Reservation whose `series` is this row, placed or pending on its own,
    released on its own or with the series. What the tenant reads of it: its id, the tenant and
    pool, the rule as RRULE text and as given (`repeat`), the first window, allOrNothing, who
    created it and when. The idempotency key is the series' own: the occurrences carry none.
    """

    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="series", db_index=False)
    pool = models.ForeignKey(Pool, on_delete=models.PROTECT, related_name="series", db_index=False)
    rule = models.CharField(max_length=200, help_text="The RFC 5545 RRULE value, in UTC.")
    repeat = models.JSONField(
        help_text="The rule as the API takes it (freq, byDay, interval, count or until)."
    )
    request = models.JSONField(help_text="The caller's input, as each occurrence's request keeps it.")
    starts_at = models.DateTimeField(help_text="The first occurrence's start.")
    ends_at = models.DateTimeField(help_text="The first occurrence's end.")
    all_or_nothing = models.BooleanField(default=False)
    idempotency_key = models.CharField(max_length=200, null=True, blank=True)
    created_by = models.CharField(max_length=150, blank=True, help_text="Who created it (user name).")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "series"
        indexes = [models.Index(fields=["tenant", "-created_at"], name="series_tenant_newest_idx")]
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "idempotency_key"],
                condition=Q(idempotency_key__isnull=False),
                name="series_idempotency_key_unique",
                violation_error_message="This tenant already used this idempotency key for a series.",
            ),
            models.CheckConstraint(
                condition=Q(ends_at__gt=models.F("starts_at")),
                name="series_window_nonempty",
                violation_error_message="A series' first window must end after it starts.",
            ),
        ]

    def __str__(self) -> str:
        return f"series {self.pk} ({self.rule})"
