from django.db import models

from inventory.models import Pool


class PoolCapacityRollup(models.Model):
    """Atom counts of one device class in one pool: inventory only, refreshed when inventory changes.

    What is booked is read from the bookings at the time asked (see capacity.rollups.booked_counts),
    so an ended booking stops counting at its end with no process running. A GPU split into MIG
    slices is not an atom: its slices are counted in their own classes.
    """

    pool = models.ForeignKey(Pool, on_delete=models.CASCADE, related_name="rollups")
    device_class = models.CharField(max_length=50)
    total = models.IntegerField(default=0)
    excluded = models.IntegerField(default=0)
    maintenance = models.IntegerField(default=0)
    cordoned = models.IntegerField(default=0, help_text="Cordoned nodes not in maintenance.")
    provisioning = models.IntegerField(default=0)
    unreachable = models.IntegerField(default=0)
    unhealthy = models.IntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["pool", "device_class"]
        constraints = [
            models.UniqueConstraint(
                fields=["pool", "device_class"],
                name="rollup_unique",
                violation_error_message="The pool already has a rollup for this device class.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.pool}:{self.device_class}"


# A GPU-hour in the booked-hours rollups' unit: a whole GPU counts 7 a microsecond and a MIG slice
# its compute slices (inventory.gpu_share), so every share of every window sums exactly in integers.
GPU_HOUR = 7 * 3_600_000_000


class BookedHours(models.Model):
    """GPU-hours booked by one tenant in one pool on one GPU model on one UTC day: the usage report's rows.

    Kept in the booking's transaction: statement triggers on the live and history bookings (and on
    a device whose model or class changes) append each change to BookedHoursChange (migration
    0030), and the worker folds those changes in here (capacity.booked_hours). The figure of a day
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
    BookedPointsChange, the same fold folds (capacity.booked_hours). A point at midnight (x = 0)
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
        indexes = [models.Index(fields=["day"], name="bookedpointschange_day_idx")]

    def __str__(self) -> str:
        return f"{self.tenant_id}/{self.pool_id}/{self.gpu_model}@{self.day}+{self.hour}h{self.share:+d}"
