"""Record every sign-in and failed sign-in (identity.SignInEvent), password and SSO alike."""

from __future__ import annotations

from django.contrib.auth.signals import user_logged_in, user_login_failed
from django.dispatch import receiver

from config.accounts import client_ip
from identity.models import ProviderIdentity, SignInEvent
from trail.context import request_id

OIDC_BACKEND = "identity.backends.OidcBackend"
USERNAME_MAX = 150


def address_of(request) -> str | None:
    """Return the address a sign-in came from, as the sign-in limits count it (config/accounts.py)."""
    return client_ip(request) if request is not None else None


@receiver(user_logged_in, dispatch_uid="identity_sign_in")
def signed_in(sender, request, user, **kwargs):
    """Record a sign-in; an SSO one with the provider's issuer and sub."""
    sso = getattr(user, "backend", "") == OIDC_BACKEND
    identity = ProviderIdentity.objects.filter(user=user).first() if sso else None
    SignInEvent.objects.create(
        method=SignInEvent.SSO if sso else SignInEvent.PASSWORD,
        succeeded=True,
        user=user,
        username=user.get_username(),
        issuer=identity.issuer if identity else "",
        subject=identity.subject if identity else "",
        address=address_of(request),
        request_id=request_id(),
    )


@receiver(user_login_failed, dispatch_uid="identity_sign_in_failed")
def password_refused(sender, credentials, request=None, **kwargs):
    """Record a wrong password (the SSO callback records its own failures: identity.views.refused)."""
    if "username" not in credentials:
        return
    SignInEvent.objects.create(
        method=SignInEvent.PASSWORD,
        succeeded=False,
        username=str(credentials["username"])[:USERNAME_MAX],
        reason="wrong username or password",
        address=address_of(request),
        request_id=request_id(),
    )


def sso_refused(request, reason: str, *, issuer: str = "", subject: str = "", username: str = "") -> None:
    """Record an SSO sign-in that did not happen, and why; whom it was for where the token said."""
    SignInEvent.objects.create(
        method=SignInEvent.SSO,
        succeeded=False,
        reason=reason[:300],
        address=address_of(request),
        request_id=request_id(),
        issuer=issuer,
        subject=subject,
        username=username,
    )
