from django.apps import AppConfig
from django.db.models.signals import post_migrate

from config import access as config_access
from config import actions as config_actions
from config import (
    checks,  # noqa: F401  (registers the database hosts check)
    warmup,
)


def create_functions(using="default", **kwargs):
    """Create the server-side functions the services call, made from their SQL as it is now."""
    from django.db import connections

    from .placers.commit import COMMIT
    from .services.insert import CHARGED

    with connections[using].cursor() as cur:
        cur.execute(CHARGED.create_sql)
        cur.execute(COMMIT.create_sql)


class CapacityConfig(AppConfig):
    """What is booked: quota, reservations, allocations, device bookings and rollups."""

    name = "capacity"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from . import receivers  # noqa: F401  (connects the signal receivers)

        post_migrate.connect(create_functions, sender=self)
        plug_into_config()


def plug_into_config():
    """Answer config's questions: who may do what (capacity.access; identity answers whether a token is
    refused); do its actions (release); warm the pool indexes."""
    from .access import is_operator, remember_who, scope_for, view_refusal, who_sql
    from .placers.index import warm_indexes
    from .services.release import release

    config_access.register(
        is_operator=is_operator,
        scope_for=scope_for,
        view_refusal=view_refusal,
        who_sql=who_sql,
        remember_who=remember_who,
    )
    config_actions.register(release=release)
    warmup.register(warm_indexes)
