from django.apps import AppConfig


class TrailConfig(AppConfig):
    """The audit trail's one table, the request id middleware and who acts."""

    name = "trail"
    default_auto_field = "django.db.models.BigAutoField"
