from django.conf import settings
from django.contrib.sessions.base_session import AbstractBaseSession
from django.db import models
from django.utils.module_loading import import_string
from rest_framework.authtoken.models import Token


class ProviderIdentity(models.Model):
    """Who a Berth user is at the identity provider: its issuer and `sub`, never the e-mail."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="provider_identity"
    )
    issuer = models.CharField(max_length=255)
    subject = models.CharField(max_length=255)
    created_at = models.DateTimeField(auto_now_add=True)
    last_sign_in_at = models.DateTimeField(null=True, blank=True)
    # The groups claim at the last sign-in, as the provider sent it (what the memberships came from).
    groups = models.JSONField(default=list, blank=True)

    class Meta:
        verbose_name_plural = "provider identities"
        constraints = [
            models.UniqueConstraint(
                fields=["issuer", "subject"],
                name="identity_one_user_per_issuer_subject",
                violation_error_message="This provider identity already belongs to a user.",
            )
        ]

    def __str__(self) -> str:
        return f"{self.subject} at {self.issuer}"


class SignInEvent(models.Model):
    """A sign-in or a failed one, by password or SSO: what the audit export lists as sign-ins."""

    PASSWORD = "password"
    SSO = "sso"
    METHODS = [(PASSWORD, "password"), (SSO, "SSO")]

    at = models.DateTimeField(auto_now_add=True)
    method = models.CharField(max_length=10, choices=METHODS)
    succeeded = models.BooleanField()
    # Null once the user is deleted; `username` keeps the name (for a failure, the one typed).
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    username = models.CharField(max_length=150, blank=True)
    issuer = models.CharField(max_length=255, blank=True)
    subject = models.CharField(max_length=255, blank=True, help_text="The provider's sub (SSO).")
    reason = models.CharField(max_length=300, blank=True, help_text="Why a sign-in failed, in words.")
    address = models.GenericIPAddressField(null=True, blank=True)
    request_id = models.CharField(max_length=64, null=True, blank=True, help_text="The sign-in's request.")

    class Meta:
        ordering = ["-at", "-id"]
        # The audit export pages sign-ins newest first; by username for its actor filter.
        indexes = [
            models.Index(fields=["-at", "-id"], name="sign_in_event_newest_idx"),
            models.Index(fields=["username", "-at"], name="sign_in_event_username_idx"),
        ]

    def __str__(self) -> str:
        outcome = "signed in" if self.succeeded else "failed to sign in"
        return f"{self.username or '?'} {outcome} by {self.method} at {self.at:%Y-%m-%d %H:%M:%S}"


class Session(AbstractBaseSession):
    """A browser's session, naming its signed-in user in a column: one statement reads both.

    Django's session row keeps the user only inside its signed data; with the user's id beside it
    the session store (identity/sessions.py) joins the user, whether they are an operator and their
    tenants into the statement that reads the session. Signing out deletes the row; deleting the
    user deletes their sessions.
    """

    # No constraint in the database: a request whose user is deleted meanwhile still saves its session
    # (which then reads no user); deleting a user through Django deletes their sessions.
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="+",
        db_constraint=False,
    )

    @classmethod
    def get_session_store_class(cls):
        """Return the store SESSION_ENGINE names (identity.sessions'), as SessionMiddleware loads it."""
        return import_string(f"{settings.SESSION_ENGINE}.SessionStore")


class TokenLifetime(models.Model):
    """An API token's own expiry (else its issue time plus TOKEN_DAYS) and its revocation.

    DRF's tokens carry the key; this row carries when it stops working (identity.tokens reads it).
    Tokens without a row (made by `drf_create_token` or the admin) expire by the setting alone, so
    shortening TOKEN_DAYS shortens every such token at once. The table kept its name when the model
    moved from capacity (identity migration 0007).
    """

    token = models.OneToOneField(Token, on_delete=models.CASCADE, primary_key=True, related_name="lifetime")
    expires_at = models.DateTimeField(null=True, blank=True, help_text="Empty: issued + TOKEN_DAYS.")
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by = models.CharField(max_length=150, blank=True, help_text="Who revoked it, and how.")

    class Meta:
        db_table = "capacity_tokenlifetime"

    def __str__(self) -> str:
        return f"lifetime of {self.token.user}'s token"
