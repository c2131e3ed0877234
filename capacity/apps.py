from django.apps import AppConfig


class CapacityConfig(AppConfig):
    """What is booked: quota, reservations, allocations, device bookings and rollups."""

    name = "capacity"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from . import receivers  # noqa: F401  (connects the signal receivers)
