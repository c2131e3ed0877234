from django.apps import AppConfig

from config import access as config_access


class IdentityConfig(AppConfig):
    """OpenID Connect sign-in: who a person is at the provider, and the tenants their groups give; API
    tokens (identity.tokens): who holds a key, until when."""

    name = "identity"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from identity import receivers  # noqa: F401
        from identity.tokens import token_refusal

        # config's token check (config/api/auth.py) asks whether a token is refused: expiry and
        # revocation are identity's rows.
        config_access.register(token_refusal=token_refusal)
