"""When API tokens stop working: DRF's tokens carry the key; this row carries expiry and revocation."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import models
from rest_framework.authtoken.models import Token


class TokenLifetime(models.Model):
    """An API token's own expiry (else its issue time plus TOKEN_DAYS) and its revocation.

    Tokens without a row (made by `drf_create_token` or the admin) expire by the setting alone, so
    shortening TOKEN_DAYS shortens every such token at once.
    """

    token = models.OneToOneField(Token, on_delete=models.CASCADE, primary_key=True, related_name="lifetime")
    expires_at = models.DateTimeField(null=True, blank=True, help_text="Empty: issued + TOKEN_DAYS.")
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by = models.CharField(max_length=150, blank=True, help_text="Who revoked it, and how.")

    def __str__(self) -> str:
        return f"lifetime of {self.token.user}'s token"


def token_expiry(token: Token) -> datetime:
    """Return when this token stops working unless revoked first."""
    lifetime = token.lifetime if _has_lifetime(token) else None
    if lifetime is not None and lifetime.expires_at is not None:
        return lifetime.expires_at
    return token.created + timedelta(days=settings.TOKEN_DAYS)


def token_revoked_at(token: Token) -> datetime | None:
    """Return when the token was revoked, or None."""
    return token.lifetime.revoked_at if _has_lifetime(token) else None


def _has_lifetime(token: Token) -> bool:
    try:
        token.lifetime  # noqa: B018  (a missing reverse one-to-one raises)
    except TokenLifetime.DoesNotExist:
        return False
    return True
