"""What usage does when inventory says so (inventory never imports usage)."""

from django.dispatch import receiver

from inventory.signals import devices_withdrawn

from .models import DeviceSampleHour


@receiver(devices_withdrawn, dispatch_uid="usage.devices_withdrawn")
def drop_withdrawn_hours(sender, device_ids, **kwargs):
    """Delete the hourly rows of devices a report withdrew, in the report's transaction."""
    DeviceSampleHour.objects.filter(device_id__in=device_ids).delete()
