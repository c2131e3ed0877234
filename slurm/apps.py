from django.apps import AppConfig


class SlurmConfig(AppConfig):
    """The bridge to a Slurm cluster: bookings become reservations, Slurm's view comes back (docs/slurm.md)."""

    name = "slurm"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from django.db.models.signals import post_delete, post_save

        from capacity.port import Job, register, register_check, register_rule, register_section

        from .accounts import RULE
        from .jobs import run_once, serve
        from .models import BridgedPool
        from .section import SECTION
        from .services import problems

        register(Job("slurm", run_once, serve))
        register_rule(RULE)
        register_section(SECTION)
        register_check("slurm", problems)
        for signal in (post_save, post_delete):
            signal.connect(
                forget_bridges, sender=BridgedPool, weak=False, dispatch_uid=f"slurm-forget-{id(signal)}"
            )


def forget_bridges(**kwargs) -> None:
    """Read the bridged pools again at the next booking in this process."""
    from .accounts import forget

    forget()
