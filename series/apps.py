from django.apps import AppConfig


class SeriesConfig(AppConfig):
    """Recurring bookings, handed over by capacity's create, pages and command (capacity.series_hooks)."""

    name = "series"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from .hooks import register

        register()
