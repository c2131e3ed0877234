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
