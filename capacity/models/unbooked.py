from django.db import models

from inventory.models import Device, Node


class UnbookedUse(models.Model):
    """A GPU running processes that no reservation holds: one row per device while it lasts.

    The worker's housekeeping adds the row when a device's latest sample shows processes outside
    every booking and removes it when that ends (capacity/services/unbooked.py); a row's insert is
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
        ordering = ["node", "device"]

    def __str__(self) -> str:
        return self.message
