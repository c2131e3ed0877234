from django.db import models

from inventory.models import Pool


class PoolCapacityRollup(models.Model):
    """Atom counts of one device class in one pool: inventory only, refreshed when inventory changes.

    What is booked is read from the bookings at the time asked (capacity.rollups.live_counts),
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
