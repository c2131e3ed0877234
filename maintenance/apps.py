from django.apps import AppConfig


class MaintenanceConfig(AppConfig):
    """Taking nodes out of service: cordon, uncordon, maintenance mode and drain (the API, the node
    page's drain, the cordon, uncordon and drain commands), and maintenance windows planned ahead:
    scheduled and cancelled by operators (the API, the pages, the command, the Slurm bridge), started
    and ended by the worker, told to the bookings they take GPUs from. Capacity keeps the tables,
    the node page and moves the bookings; this app plugs into it."""

    name = "maintenance"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from capacity.port import BEFORE_REPAIR, register_panel, register_repair_condition, register_step

        from .notice import after_move
        from .pages import PANEL
        from .windows import switch_windows

        # In the worker's round, before its repair moves what a started window's nodes still hold.
        register_step(BEFORE_REPAIR, "maintenance-windows", switch_windows)
        # Each repair keeps the booking's MaintenanceScheduled condition true, in its transaction.
        register_repair_condition("maintenance", after_move)
        register_panel(PANEL)
