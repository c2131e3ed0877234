"""Booked against used: hourly folds of the devices' samples, and GPUs in use without a booking.

The tables keep the names they had in inventory and capacity (moved here with
SeparateDatabaseAndState, their rows untouched).
"""

from django.contrib.postgres.indexes import BrinIndex
from django.db import models

from inventory.models import Device, Node


class UnbookedUse(models.Model):
    """A GPU running processes that no reservation holds: one row per device while it lasts.

    usage's worker job adds the row when a device's latest sample shows processes outside
    every booking and removes it when that ends (usage/unbooked.py); a row's insert is
    the spell's one `node.unbooked_use` event.
    """

    device = models.OneToOneField(Device, on_delete=models.CASCADE, primary_key=True, related_name="+")
    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="unbooked_use")
    since = models.DateTimeField(help_text="The first minute of this spell of use without a booking.")
    seen_at = models.DateTimeField(help_text="The latest sample that showed it.")
    processes = models.SmallIntegerField(default=0)
    process_mib = models.IntegerField(default=0)
    message = models.CharField(max_length=300)

    class Meta:
        db_table = "capacity_unbookeduse"
        ordering = ["node", "device"]

    def __str__(self) -> str:
        return self.message


class DeviceSampleHour(models.Model):
    """A device's samples of one hour folded into one row, kept USAGE_HOURLY_DAYS (a year).

    Sums and counts, not means, so hours add up exactly: a report's used GPU-hours over whole hours
    read 1/60 of the rows. The worker folds each hour once it is over (usage/folds.py); raw
    minutes then stay USAGE_RAW_DAYS for the exact edges of bookings that start or end mid-hour.
    """

    pk = models.CompositePrimaryKey("device", "hour")
    device = models.ForeignKey(
        "inventory.Device", on_delete=models.CASCADE, related_name="sample_hours", db_index=False
    )
    hour = models.DateTimeField()
    gpu_percent_sum = models.IntegerField(default=0, help_text="The sum of the minutes' GPU %.")
    samples = models.SmallIntegerField(default=0, help_text="Minutes with a GPU %.")
    minutes_without_process = models.SmallIntegerField(default=0)
    memory_used_mib_max = models.IntegerField(null=True, blank=True)
    process_mib_max = models.IntegerField(default=0)

    class Meta:
        db_table = "inventory_devicesamplehour"
        constraints = [
            models.CheckConstraint(
                condition=models.Q(samples__gte=0, samples__lte=60, minutes_without_process__lte=60),
                name="devicesamplehour_minutes_0_60",
                violation_error_message="An hour holds at most 60 minutes.",
            ),
        ]
        indexes = [BrinIndex(fields=["hour"], name="devicesamplehour_hour_brin")]

    def __str__(self) -> str:
        return f"{self.device_id} at {self.hour:%Y-%m-%d %H}:00: {self.samples} samples"


class SampleFold(models.Model):
    """How far raw samples are folded into hours: one row, its `folded_until` an hour boundary."""

    folded_until = models.DateTimeField(help_text="Every hour before this one is folded.")

    class Meta:
        db_table = "inventory_samplefold"

    def __str__(self) -> str:
        return f"samples folded until {self.folded_until:%Y-%m-%d %H}:00"
