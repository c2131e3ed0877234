from django.apps import AppConfig


class InventoryConfig(AppConfig):
    """What exists: tenants, sites, pools, nodes and their devices."""

    name = "inventory"
    default_auto_field = "django.db.models.BigAutoField"
