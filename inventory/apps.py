from django.apps import AppConfig

from config.api.exceptions import register_error
from config.errors import INVALID_INPUT

from .errors import FilterError, IngestError


class InventoryConfig(AppConfig):
    """What exists: tenants, sites, pools, nodes and their devices."""

    name = "inventory"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # The API answers inventory's input errors with their codes (config imports no app).
        register_error(IngestError, lambda exc: (exc.code, str(exc)))
        register_error(FilterError, lambda exc: (INVALID_INPUT, exc.message))
