from django.apps import AppConfig


class SlurmConfig(AppConfig):
    """The bridge to a Slurm cluster: bookings become reservations, Slurm's view comes back (docs/slurm.md)."""

    name = "slurm"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from django.db.models.signals import post_delete, post_save

        from capacity.port import Job, register, register_check, register_rule, register_section

        from .accounts import RULES
        from .jobs import run_once, serve
        from .models import BridgedPool
        from .section import SECTION
        from .services import problems

        register(Job("slurm", run_once, serve))
        for rule in RULES:
            register_rule(rule)
        register_section(SECTION)
        register_check("slurm", problems)
        # However a bridge is written (the API, the page, the admin), the pool's rule follows it.
        post_save.connect(rule_follows, sender=BridgedPool, dispatch_uid="slurm-rule-follows")
        post_delete.connect(rule_goes, sender=BridgedPool, dispatch_uid="slurm-rule-goes")


def rule_follows(sender, instance, **kwargs) -> None:
    """Turn the pool's `slurm` rules on while its bridge is enabled (whole nodes: when it says so), off otherwise."""
    from capacity.port import switch_rule

    from .accounts import NAME, WHOLE_NODES

    switch_rule(instance.pool_id, NAME, instance.enabled)
    switch_rule(instance.pool_id, WHOLE_NODES, instance.enabled and instance.whole_nodes_only)


def rule_goes(sender, instance, **kwargs) -> None:
    """Turn the pool's `slurm` rules off with its bridge."""
    from capacity.port import switch_rule

    from .accounts import NAME, WHOLE_NODES

    switch_rule(instance.pool_id, NAME, False)
    switch_rule(instance.pool_id, WHOLE_NODES, False)
