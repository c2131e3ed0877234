from django.apps import AppConfig


class UsageConfig(AppConfig):
    """Booked against used: samples folded by the hour, booked hours, idle bookings, unbooked use, the usage report."""

    name = "usage"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from capacity.port import BEFORE_REPAIR, Job, register, register_drift, register_step, usage_hooks

        from . import receivers  # noqa: F401  (connects the signal receivers)
        from .booked_hours import booked_hours_drift
        from .figures import usage_for, usage_series
        from .jobs import fold_hours, run_once, serve
        from .unbooked import unbooked_use_on

        usage_hooks.answer(figures=usage_for, series=usage_series, unbooked=unbooked_use_on)
        register(Job("usage", run_once, serve))
        register_step(BEFORE_REPAIR, "usage", fold_hours)
        register_drift("usage", booked_hours_drift)
