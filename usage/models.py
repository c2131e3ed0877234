"""Booked against used: hourly folds of the devices' samples, GPUs in use without a booking, and
the GPU-hours booked per tenant, pool, GPU model and day.

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


# A GPU-hour in the booked-hours rollups' unit: a whole GPU counts 7 a microsecond and a MIG slice
# its compute slices (inventory.gpu_share), so every share of every window sums exactly in integers.
GPU_HOUR = 7 * 3_600_000_000


class BookedHours(models.Model):
    """GPU-hours booked by one tenant in one pool on one GPU model on one UTC day: the usage report's rows.

    Kept in the booking's transaction: statement triggers on the live and history bookings (and on
    a device whose model or class changes) append each change to BookedHoursChange (capacity
    migration 0035), and the worker folds those changes in here (usage.booked_hours). The figure of a day
    is this row plus its changes not yet folded. `booked` counts every layer; `lent` the part spot
    work held on an idle owner's lent GPUs (layer 1). Units: GPU_HOUR a GPU-hour.
    """

    # Ids, not foreign keys: history outlives nothing here, and the report joins the names it shows.
    tenant_id = models.BigIntegerField()
    pool_id = models.BigIntegerField()
    gpu_model = models.CharField(max_length=200, help_text="The device's productName, else its class.")
    day = models.DateField(help_text="The UTC day.")
    booked = models.BigIntegerField(help_text="GPU-hours booked × GPU_HOUR (every layer).")
    lent = models.BigIntegerField(help_text="Of booked, the hours on lent GPUs (layer 1) × GPU_HOUR.")

    class Meta:
        db_table = "capacity_bookedhours"
        constraints = [
            models.UniqueConstraint(
                fields=["day", "tenant_id", "pool_id", "gpu_model"],
                name="bookedhours_unique",
                violation_error_message="The tenant already has booked hours for this pool, model and day.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.tenant_id}/{self.pool_id}/{self.gpu_model}@{self.day}={self.booked / GPU_HOUR:.3f}h"


class BookedHoursChange(models.Model):
    """A change to BookedHours that the worker has not folded in yet: appended by the triggers, never updated.

    Appending takes no row lock, so bookings racing for one tenant, pool, model and day neither
    wait for each other here nor lose an update, and no order of rows can deadlock.
    """

    tenant_id = models.BigIntegerField()
    pool_id = models.BigIntegerField()
    gpu_model = models.CharField(max_length=200)
    day = models.DateField()
    booked = models.BigIntegerField()
    lent = models.BigIntegerField()

    class Meta:
        db_table = "capacity_bookedhourschange"
        indexes = [models.Index(fields=["day"], name="bookedhourschange_day_idx")]

    def __str__(self) -> str:
        return f"{self.tenant_id}/{self.pool_id}/{self.gpu_model}@{self.day}{self.booked:+d}"


class BookedPoints(models.Model):
    """Where bookings start and end within one UTC day, per tenant, pool, GPU model and hour: how a day splits at now.

    A booking's piece of a day [start, end) is booked to date at `now` for share × (min(end, now) −
    min(start, now)): a sum over its two points x (µs since midnight, ends +, starts −) of sign ×
    share × min(x, now). So an hour wholly before now adds its `moment` (Σ sign × share × x), one
    wholly after adds now × its `share` (Σ sign × share), and only the bookings with a point in
    now's own hour are read (usage.report). Kept like BookedHours: the same triggers append to
    BookedPointsChange, the same fold folds (usage.booked_hours). A point at midnight (x = 0)
    counts nothing at any now and is not kept; a day's end (x = 24 h) is hour 24. Units: share in
    sevenths of a GPU, moment in GPU_HOUR units (sevenths × µs).
    """

    tenant_id = models.BigIntegerField()
    pool_id = models.BigIntegerField()
    gpu_model = models.CharField(max_length=200)
    day = models.DateField(help_text="The UTC day.")
    hour = models.SmallIntegerField(help_text="The points' hour since the day's midnight (UTC), 0 to 24.")
    share = models.BigIntegerField(help_text="Σ sign × sevenths of a GPU: ends +, starts −.")
    moment = models.BigIntegerField(help_text="Σ sign × sevenths × µs since midnight (GPU_HOUR units).")
    lent_share = models.BigIntegerField(help_text="share, of the points on lent GPUs (layer 1).")
    lent_moment = models.BigIntegerField(help_text="moment, of the points on lent GPUs (layer 1).")

    class Meta:
        db_table = "capacity_bookedpoints"
        constraints = [
            models.UniqueConstraint(
                fields=["day", "tenant_id", "pool_id", "gpu_model", "hour"],
                name="bookedpoints_unique",
                violation_error_message="The tenant already has booked points for this pool, model, day and hour.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.tenant_id}/{self.pool_id}/{self.gpu_model}@{self.day}+{self.hour}h={self.share:+d}"


class BookedPointsChange(models.Model):
    """A change to BookedPoints that the worker has not folded in yet: appended by the triggers, never updated."""

    tenant_id = models.BigIntegerField()
    pool_id = models.BigIntegerField()
    gpu_model = models.CharField(max_length=200)
    day = models.DateField()
    hour = models.SmallIntegerField()
    share = models.BigIntegerField()
    moment = models.BigIntegerField()
    lent_share = models.BigIntegerField()
    lent_moment = models.BigIntegerField()

    class Meta:
        db_table = "capacity_bookedpointschange"
        indexes = [models.Index(fields=["day"], name="bookedpointschange_day_idx")]

    def __str__(self) -> str:
        return f"{self.tenant_id}/{self.pool_id}/{self.gpu_model}@{self.day}+{self.hour}h{self.share:+d}"
