"""Maintenance windows planned ahead: spans in which nodes take no new work."""

from django.db import models
from django.db.models import F, Q

from inventory.models import Node, Pool


class MaintenanceWindow(models.Model):
    """An operator's planned maintenance of some nodes over [starts_at, ends_at) (docs/repair-and-drain.md).

    Placement, preview and earliest start put no new work on its nodes inside it; bookings that
    overlap it when it is scheduled are listed, and moved off when `move` is set. `pool` is the
    pool it was scheduled for when the operator named a pool rather than nodes. The worker puts the
    nodes in maintenance at the start (`started_at`) and takes out, at the end (`ended_at`), those
    the window put there.
    """

    pool = models.ForeignKey(Pool, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    starts_at = models.DateTimeField()
    ends_at = models.DateTimeField()
    reason = models.CharField(max_length=200, blank=True)
    move = models.BooleanField(default=False)
    created_by = models.CharField(max_length=150, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    nodes = models.ManyToManyField(Node, through="MaintenanceWindowNode", related_name="+")

    class Meta:
        ordering = ["starts_at", "id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(ends_at__gt=F("starts_at")),
                name="maintenancewindow_ends_after_start",
                violation_error_message="A maintenance window must end after it starts.",
            ),
        ]
        indexes = [models.Index(fields=["ends_at"], name="maintenancewindow_ends_idx")]

    def __str__(self) -> str:
        return f"window {self.pk} {self.starts_at:%Y-%m-%d %H:%M}–{self.ends_at:%Y-%m-%d %H:%M}"


class MaintenanceWindowNode(models.Model):
    """One node of a maintenance window, with the window's span copied for per-node reads.

    `switched` says the window's start put the node in maintenance (it was not already): only then
    does the window's end take it out again.
    """

    window = models.ForeignKey(MaintenanceWindow, on_delete=models.CASCADE, related_name="window_nodes")
    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="+")
    starts_at = models.DateTimeField()
    ends_at = models.DateTimeField()
    switched = models.BooleanField(default=False)

    class Meta:
        ordering = ["window", "node"]
        constraints = [
            models.UniqueConstraint(
                fields=["window", "node"],
                name="maintenancewindownode_once",
                violation_error_message="A node is in a maintenance window once.",
            ),
            models.CheckConstraint(
                condition=Q(ends_at__gt=F("starts_at")),
                name="maintenancewindownode_ends_after_start",
                violation_error_message="A maintenance window must end after it starts.",
            ),
        ]
        # The commit's guard and the placer's load read a node's windows not yet over.
        indexes = [models.Index(fields=["node", "ends_at"], name="maintenancewindownode_node_idx")]

    def __str__(self) -> str:
        return f"{self.window_id}:{self.node_id}"
