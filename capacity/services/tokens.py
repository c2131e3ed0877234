"""API tokens: issue one with an expiry, revoke, and say why a presented token no longer works."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone
from rest_framework.authtoken.models import Token

from capacity.access import NODE_USER_PREFIX
from capacity.models.tokens import TokenLifetime, token_expiry, token_revoked_at
from capacity.placement import NOT_FOUND, CapacityError
from inventory.models import Node
from trail.record import record


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
        raise CapacityError(NOT_FOUND, f"no node {node_name}")
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
