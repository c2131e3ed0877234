"""API tokens: issue one with an expiry, revoke, and say why a presented token no longer works.

Who holds a key is who-is-who, so tokens are identity's, beside sign-in and sessions, not capacity's
(which books): a node's own credential is the user "node.<name>" (identity.backends.NODE_USER_PREFIX,
which capacity.access reads the same way). Nothing here books, so identity still never imports
capacity; its AppConfig answers config.access's `token_refusal`, which config's token check asks.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone
from rest_framework.authtoken.models import Token

from config.errors import NOT_FOUND, BerthError
from identity.backends import NODE_USER_PREFIX
from identity.models import TokenLifetime
from inventory.models import Node
from trail.record import record


class TokenError(BerthError):
    """Refuse a token request with a stable code (config.errors): the API and the commands say it."""


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


def issue_token(user: AbstractBaseUser, days: int | None = None, now: datetime | None = None) -> Token:
    """Give the user a new token (replacing any old one), expiring after `days` or TOKEN_DAYS."""
    now = now or timezone.now()
    with transaction.atomic():
        replaced, _ = Token.objects.filter(user=user).delete()
        token = Token.objects.create(user=user)
        if days is not None:
            TokenLifetime.objects.create(token=token, expires_at=now + timedelta(days=days))
        record(  # never the key
            "token.issue",
            f"token:{user.get_username()}",
            before={"replaced": True} if replaced else None,
            after={"expiresAt": token_expiry(token).isoformat()},
        )
    return token


def issue_node_token(node_name: str, days: int | None = None, now: datetime | None = None) -> Token:
    """Give a node its own credential (replacing any old one): a token for the user "node.<name>".

    That user has no password (it never signs in to a page) and may only report for its node and
    read its assignments (capacity.access). Raise NOT_FOUND for an unknown node.
    """
    if not Node.objects.filter(name=node_name).exists():
        raise TokenError(NOT_FOUND, f"no node {node_name}")
    username = f"{NODE_USER_PREFIX}{node_name}"
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        user = get_user_model().objects.create_user(username=username)  # no password: unusable
    return issue_token(user, days=days, now=now)


def node_key_works(node_name: str, now: datetime | None = None) -> bool:
    """Return whether the node holds a key that still works: issuing another stops it at once."""
    token = (
        Token.objects.filter(user__username=f"{NODE_USER_PREFIX}{node_name}")
        .select_related("lifetime")
        .first()
    )
    return token is not None and token_refusal(token, now) is None


def replaced_key_note(node_name: str, replaced: bool) -> str:
    """Return what an operator issuing a node's key must know about the key its agent holds."""
    if replaced:
        return (
            f"node {node_name}'s previous key stopped working now: its agent is refused (401) "
            "until its token file holds this key"
        )
    return f"put this key in node {node_name}'s agent token file; it is shown once"


def revoke_token(token: Token, by: str, now: datetime | None = None) -> datetime:
    """Revoke the token (it answers 401 from now on) and return when; revoking twice keeps the first."""
    now = now or timezone.now()
    with transaction.atomic():
        lifetime, _ = TokenLifetime.objects.get_or_create(token=token)
        if lifetime.revoked_at is None:
            lifetime.revoked_at = now
            lifetime.revoked_by = by[:150]
            lifetime.save(update_fields=["revoked_at", "revoked_by"])
            record(
                "token.revoke",
                f"token:{token.user.get_username()}",
                before={"revokedAt": None},
                after={"revokedAt": now.isoformat()},
                reason=by,
            )
    return lifetime.revoked_at


def token_refusal(token: Token, now: datetime | None = None) -> str | None:
    """Return why this token may not be used (revoked or expired), or None when it may."""
    now = now or timezone.now()
    revoked_at = token_revoked_at(token)
    if revoked_at is not None:
        return f"Token revoked at {_stamp(revoked_at)}: ask an operator for a new one."
    expires_at = token_expiry(token)
    if expires_at <= now:
        return f"Token expired at {_stamp(expires_at)}: ask an operator for a new one."
    return None


def _stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%MZ")
