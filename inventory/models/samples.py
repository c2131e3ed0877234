"""Per-device utilization as nodes report it: raw minutes (the usage app folds them into hours)."""

from django.contrib.postgres.fields import ArrayField
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
    process_owners = ArrayField(
        models.BigIntegerField(),
        null=True,
        blank=True,
        help_text="Whose the processes are, as the agent attributed them: the reservations, sorted, "
        "0 for a process it could not attribute. Null: the report attributed nothing (an older agent).",
    )

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=models.Q(gpu_percent__gte=0, gpu_percent__lte=100)
                | models.Q(gpu_percent__isnull=True),
                name="devicesample_percent_0_100",
                violation_error_message="GPU utilization is a percentage from 0 to 100.",
            ),
            models.CheckConstraint(
                condition=models.Q(process_owners__len__lte=256) | models.Q(process_owners__isnull=True),
                name="devicesample_process_owners_max_256",
                violation_error_message="A sample names at most 256 owners of processes (one per process).",
            ),
        ]
        indexes = [BrinIndex(fields=["minute"], name="devicesample_minute_brin")]

    def __str__(self) -> str:
        return f"{self.device_id} at {self.minute:%Y-%m-%d %H:%M}: {self.gpu_percent} %"
