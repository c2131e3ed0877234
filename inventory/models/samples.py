"""Per-device utilization: raw minutes, hourly folds of them, and how far the fold has come."""

from django.contrib.postgres.indexes import BrinIndex
from django.db import models


class DeviceSample(models.Model):
    """What a device was doing in one minute, as its node's report said: at most one row a minute.

    A BRIN index on `minute`, not a B-tree: rows arrive in time order and are read by time range,
    so a block range summary of a few kilobytes finds them where a B-tree would cost as much as
    the table. Raw rows are kept USAGE_RAW_DAYS.
    """

    # The key is (device, minute): no id column and no index beyond it, about 100 bytes a row less.
    pk = models.CompositePrimaryKey("device", "minute")
    device = models.ForeignKey(
        "inventory.Device", on_delete=models.CASCADE, related_name="samples", db_index=False
    )
    minute = models.DateTimeField()
    gpu_percent = models.SmallIntegerField(null=True, blank=True)
    memory_used_mib = models.IntegerField(null=True, blank=True)
    processes = models.SmallIntegerField(default=0)
    process_mib = models.IntegerField(default=0)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=models.Q(gpu_percent__gte=0, gpu_percent__lte=100)
                | models.Q(gpu_percent__isnull=True),
                name="devicesample_percent_0_100",
                violation_error_message="GPU utilization is a percentage from 0 to 100.",
            ),
        ]
        indexes = [BrinIndex(fields=["minute"], name="devicesample_minute_brin")]

    def __str__(self) -> str:
        return f"{self.device_id} at {self.minute:%Y-%m-%d %H:%M}: {self.gpu_percent} %"


class DeviceSampleHour(models.Model):
    """A device's samples of one hour folded into one row, kept USAGE_HOURLY_DAYS (a year).

    Sums and counts, not means, so hours add up exactly: a report's used GPU-hours over whole hours
    read 1/60 of the rows. The worker folds each hour once it is over (inventory/samples.py); raw
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

    def __str__(self) -> str:
        return f"samples folded until {self.folded_until:%Y-%m-%d %H}:00"
