"""What-if runs: an operator's inputs, run by the worker, and the result kept to compare."""

from django.conf import settings
from django.db import models


class WhatIfRun(models.Model):
    """One what-if run of a pool: who asked, the inputs, how far it got, and its result."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    pool = models.ForeignKey("inventory.Pool", on_delete=models.CASCADE, related_name="whatif_runs")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # The form's cleaned values, as whatif.simulation reads them back (inputs_from_stored).
    inputs = models.JSONField()
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.QUEUED)
    progress = models.PositiveSmallIntegerField(default=0)  # per cent of both sides' requests placed
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    result = models.JSONField(null=True, blank=True)
    error = models.CharField(max_length=500, blank=True, default="")

    class Meta:
        # The table it was created in when what-if lived in capacity: moved apps, kept rows.
        db_table = "capacity_whatifrun"
        indexes = [
            models.Index(fields=["pool", "-created_at"], name="whatif_pool_newest_idx"),
            models.Index(fields=["status", "created_at"], name="whatif_queue_idx"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(progress__lte=100),
                name="whatif_progress_at_most_100",
                violation_error_message="A run's progress is a per cent: at most 100.",
            ),
            models.CheckConstraint(
                condition=models.Q(status__in=["queued", "running", "done", "failed"]),
                name="whatif_status_known",
                violation_error_message="A run is queued, running, done or failed.",
            ),
            models.CheckConstraint(
                condition=~models.Q(status="done") | models.Q(result__isnull=False),
                name="whatif_done_has_result",
                violation_error_message="A finished run keeps its result.",
            ),
        ]

    def __str__(self) -> str:
        return f"what-if #{self.pk} of {self.pool_id} ({self.status})"
