from django.apps import AppConfig


class IdentityConfig(AppConfig):
    """OpenID Connect sign-in: who a person is at the provider, and the tenants their groups give."""

    name = "identity"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from identity import receivers  # noqa: F401
