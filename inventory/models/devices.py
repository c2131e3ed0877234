from django.db import models
from django.db.models import F, Q

from .nodes import Node


class Device(models.Model):
    """A bookable atom (a GPU, a MIG slice) or a partitioned parent, with its reported attributes."""

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="devices")
    uuid = models.CharField(max_length=100, unique=True, help_text="Such as GPU-… or MIG-…")
    device_class = models.CharField(max_length=50, default="gpu")
    parent = models.ForeignKey(
        "self", on_delete=models.CASCADE, null=True, blank=True, related_name="children"
    )
    index = models.PositiveIntegerField(default=0)
    numa_node = models.SmallIntegerField(null=True, blank=True)
    attributes = models.JSONField(default=dict, blank=True)
    healthy = models.BooleanField(default=True)
    bookable = models.BooleanField(default=True)
    # False for hardware a node reported after its first report: shown, counted nowhere, never
    # offered, until an operator accepts it (inventory.trust.accept_devices).
    verified = models.BooleanField(default=True)

    class Meta:
        ordering = ["node", "index", "uuid"]
        indexes = [models.Index(fields=["node", "device_class"], name="device_node_class_idx")]
        constraints = [
            # Every place that books or counts respects `bookable`: so it excludes unverified devices too.
            models.CheckConstraint(
                condition=Q(verified=True) | Q(bookable=False),
                name="device_unverified_not_bookable",
                violation_error_message="A device a node reported is not bookable until an operator accepts it.",
            ),
        ]

    def __str__(self) -> str:
        return self.uuid


class DeviceLink(models.Model):
    """The link between two GPUs of a node, one row per unordered pair, as `nvidia-smi topo -m` ranks it."""

    class Rank(models.TextChoices):
        NV = "NV"
        PIX = "PIX"
        PXB = "PXB"
        PHB = "PHB"
        NODE = "NODE"
        SYS = "SYS"

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="links")
    device_a = models.ForeignKey(Device, on_delete=models.CASCADE, related_name="+")
    device_b = models.ForeignKey(Device, on_delete=models.CASCADE, related_name="+")
    rank = models.CharField(max_length=4, choices=Rank)
    nvlinks = models.PositiveSmallIntegerField(default=0, help_text="NV# bond count, when NV.")

    class Meta:
        ordering = ["node", "device_a", "device_b"]
        constraints = [
            models.UniqueConstraint(
                fields=["device_a", "device_b"],
                name="devicelink_unique_pair",
                violation_error_message="This pair of devices already has a link.",
            ),
            models.CheckConstraint(
                condition=Q(device_a__lt=F("device_b")),
                name="devicelink_ordered_pair",
                violation_error_message="Store each pair once, the lower device id first.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.device_a_id}-{self.device_b_id}:{self.rank}"
