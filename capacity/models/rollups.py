from django.db import models

from inventory.models import Pool


class PoolCapacityRollup(models.Model):
    """Atom counts of one device class in one pool, kept by deltas; `check_capacity` audits them."""

    pool = models.ForeignKey(Pool, on_delete=models.CASCADE, related_name="rollups")
    device_class = models.CharField(max_length=50)
    total = models.IntegerField(default=0)
    allocated = models.IntegerField(default=0)
    excluded = models.IntegerField(default=0)
    maintenance = models.IntegerField(default=0)
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
