"""Authentication backends: passwords (BERTH_LOCAL_LOGIN) and the OpenID Connect callback.

OidcBackend is mozilla-django-oidc's backend with what Berth asks beyond it: endpoints from the
discovery document; the ID token's signature (RS256 or ES256, the provider's JWKS), `iss`, `aud`,
`exp` and `iat` all checked; the user found by (issuer, `sub`), never by e-mail; claims longer than
Berth's fields refused; memberships set from the groups claim at every sign-in (identity/groups.py).
"""

from __future__ import annotations

import hashlib
import logging
import re

import jwt
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.db import IntegrityError, transaction
from django.utils import timezone
from mozilla_django_oidc.auth import OIDCAuthenticationBackend

from identity import discovery
from identity.groups import BadGroupsClaim, apply_groups, groups_from
from identity.models import ProviderIdentity, SignInEvent

log = logging.getLogger(__name__)

SIGNING_ALGORITHMS = ("RS256", "ES256")
# Clocks of Berth and the provider may differ this much (seconds) for exp and iat.
LEEWAY_SECONDS = 60
# capacity.access.NODE_USER_PREFIX: a person's username must never read as a node credential.
NODE_USER_PREFIX = "node."
ENDPOINTS = {
    "OIDC_OP_AUTHORIZATION_ENDPOINT": "authorization_endpoint",
    "OIDC_OP_TOKEN_ENDPOINT": "token_endpoint",
    "OIDC_OP_USER_ENDPOINT": "userinfo_endpoint",
    "OIDC_OP_JWKS_ENDPOINT": "jwks_uri",
}


class SignInRefused(Exception):
    """The provider's answer does not sign anyone in; the message says why, in words.

    Refused after the ID token checked out, it names the token's issuer and sub for the audit.
    """

    issuer = ""
    subject = ""


class LocalPasswordBackend(ModelBackend):
    """Django's password check; with BERTH_LOCAL_LOGIN=0 it lets only superusers in (break glass)."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        user = super().authenticate(request, username=username, password=password, **kwargs)
        if user is not None and not settings.BERTH_LOCAL_LOGIN and not user.is_superuser:
            return None
        return user


def provider_setting(attr: str, *default):
    """Return a mozilla-django-oidc setting, the provider's endpoints read from its discovery document."""
    if attr in ENDPOINTS:
        return discovery.document().get(ENDPOINTS[attr], *default)
    return getattr(settings, attr, *default)


class OidcBackend(OIDCAuthenticationBackend):
    """Sign in whoever the provider vouches for, by (issuer, sub), with memberships from their groups."""

    def __init__(self, *args, **kwargs):
        # Endpoints are read when a callback arrives, not when Django lists the backends for a
        # password sign-in: that one must not wait for the provider.
        self.UserModel = get_user_model()
        self.OIDC_RP_SIGN_ALGO = "RS256"  # takes the library's JWKS path; _verify_jws allows ES256 too
        self.OIDC_RP_IDP_SIGN_KEY = None

    get_settings = staticmethod(provider_setting)

    def authenticate(self, request, **kwargs):
        # Only the callback view passes a nonce: a password sign-in never reaches the provider.
        if request is None or "nonce" not in kwargs or not discovery.configured():
            return None
        self.OIDC_RP_CLIENT_ID = settings.OIDC_RP_CLIENT_ID
        self.OIDC_RP_CLIENT_SECRET = settings.OIDC_RP_CLIENT_SECRET
        for attr in ENDPOINTS:
            setattr(self, attr, provider_setting(attr, None))
        self.OIDC_OP_JWKS_ENDPOINT = provider_setting("OIDC_OP_JWKS_ENDPOINT")
        return super().authenticate(request, **kwargs)

    def verify_token(self, token, **kwargs):
        """Refuse an algorithm other than RS256 or ES256 before any key is looked for."""
        self._algorithm(token)
        return super().verify_token(token, **kwargs)

    def _algorithm(self, token) -> str:
        if not isinstance(token, str | bytes) or not token:
            raise SignInRefused("The sign-in service sent no ID token.")
        try:
            algorithm = jwt.get_unverified_header(token).get("alg")
        except jwt.InvalidTokenError:
            raise SignInRefused("The sign-in service sent an ID token that is not a token.") from None
        offered = discovery.document().get("id_token_signing_alg_values_supported") or ["RS256"]
        if algorithm not in SIGNING_ALGORITHMS or algorithm not in offered:
            raise SignInRefused(
                f"The ID token is signed with {algorithm!r}; Berth takes RS256 or ES256 only."
            )
        return algorithm

    def retrieve_matching_jwk(self, token):
        """Return the published key the token names (kid, alg); the JWKS is fetched again once for a new kid."""
        header = jwt.get_unverified_header(token)
        for refresh in (False, True):
            for key in discovery.signing_keys(refresh=refresh):
                if not isinstance(key, dict) or key.get("kid") != header.get("kid"):
                    continue
                if "alg" in key and key["alg"] != header.get("alg"):
                    continue
                try:
                    return jwt.PyJWK(key)
                except jwt.PyJWKError:
                    raise SignInRefused("The provider published a signing key Berth cannot read.") from None
        raise SignInRefused("The ID token names a signing key the provider does not publish.")

    def _verify_jws(self, payload, key):
        """Return the ID token's claims once its signature, iss, aud, exp and iat hold."""
        algorithm = self._algorithm(payload)
        try:
            return jwt.decode(
                payload,
                key,
                algorithms=[algorithm],
                audience=settings.OIDC_RP_CLIENT_ID,
                issuer=discovery.document()["issuer"],
                leeway=LEEWAY_SECONDS,
                options={"require": ["iss", "aud", "exp", "iat", "sub"]},
            )
        except jwt.ExpiredSignatureError:
            raise SignInRefused("The ID token has expired: sign in again.") from None
        except jwt.InvalidAudienceError:
            raise SignInRefused("The ID token was issued for another application, not Berth.") from None
        except jwt.InvalidIssuerError:
            raise SignInRefused("The ID token comes from another issuer than the one configured.") from None
        except jwt.InvalidSignatureError:
            raise SignInRefused("The ID token's signature does not match the provider's keys.") from None
        except jwt.InvalidTokenError as err:
            raise SignInRefused(f"The ID token was refused: {err}.") from None

    def get_or_create_user(self, access_token, id_token, payload):
        """Return the user for (issuer, sub), created on first sign-in, with memberships from the groups."""
        try:
            return self._signed_in(access_token, id_token, payload)
        except SignInRefused as err:
            # The token checked out: the failed sign-in names whom it was for (where the field holds it).
            for name, claim in (("issuer", "iss"), ("subject", "sub")):
                value = payload.get(claim)
                if isinstance(value, str) and len(value) <= SignInEvent._meta.get_field(name).max_length:
                    setattr(err, name, value)
            raise

    def _signed_in(self, access_token, id_token, payload):
        claims = dict(payload)
        if self.OIDC_OP_USER_ENDPOINT and access_token:
            userinfo = self.get_userinfo(access_token, id_token, payload)
            if not isinstance(userinfo, dict) or userinfo.get("sub") != payload["sub"]:
                # OpenID Connect Core 5.3.2: userinfo for another subject must not be used.
                raise SignInRefused("The provider's user information names someone else than the ID token.")
            claims.update(userinfo)
        issuer = payload["iss"]
        subject = payload["sub"]
        fields = _fields_from(claims)
        try:
            groups = groups_from(claims)
        except BadGroupsClaim as err:
            raise SignInRefused(str(err)) from None
        for attempt in range(2):
            try:
                with transaction.atomic():
                    user = self._user_for(issuer, subject, claims, fields, groups)
                break
            except IntegrityError:
                # Two first sign-ins of one person at once: the other created the user; find it.
                if attempt:
                    raise SignInRefused("Another sign-in of yours was under way: try again.") from None
        log.info("Sign-in of %s (sub %s at %s), groups %s.", user.username, subject, issuer, groups)
        return user

    def _user_for(self, issuer: str, subject: str, claims: dict, fields: dict, groups: list[str]):
        """Return the user of (issuer, subject), created if new, updated from the claims and groups."""
        identity = (
            ProviderIdentity.objects.select_for_update()
            .select_related("user")
            .filter(issuer=issuer, subject=subject)
            .first()
        )
        if identity is None:
            user = self.UserModel(username=_free_username(claims, subject), **fields)
            user.set_unusable_password()
            user.save()
            identity = ProviderIdentity(user=user, issuer=issuer, subject=subject)
            log.info("First sign-in of sub %s at %s: user %s created.", subject, issuer, user.username)
        else:
            user = identity.user
            for name, value in fields.items():
                setattr(user, name, value)
            user.save(update_fields=list(fields))
        identity.groups = groups
        identity.last_sign_in_at = timezone.now()
        identity.save()
        if user.is_active:
            apply_groups(user, groups)
        return user


def _fields_from(claims: dict) -> dict:
    """Return the user's e-mail and names from the claims, refusing values longer than the fields."""
    user_model = get_user_model()
    fields = {}
    for field, claim in (("email", "email"), ("first_name", "given_name"), ("last_name", "family_name")):
        value = claims.get(claim) or ""
        if not isinstance(value, str):
            raise SignInRefused(f"The provider's {claim} claim is not text.")
        limit = user_model._meta.get_field(field).max_length
        if len(value) > limit:
            raise SignInRefused(
                f"The provider's {claim} claim is longer than Berth keeps ({limit} characters)."
            )
        fields[field] = value
    subject = claims["sub"]
    if not isinstance(subject, str) or len(subject) > ProviderIdentity._meta.get_field("subject").max_length:
        raise SignInRefused("The provider's sub claim is longer than Berth keeps (255 characters).")
    return fields


def _free_username(claims: dict, subject: str) -> str:
    """Return a username for a new user: preferred_username (or e-mail, or sub) when free."""
    limit = get_user_model()._meta.get_field("username").max_length
    wanted = claims.get("preferred_username") or claims.get("email") or subject
    if not isinstance(wanted, str) or len(wanted) > limit:
        raise SignInRefused(
            f"The provider's preferred_username is longer than Berth keeps ({limit} characters)."
        )
    base = re.sub(r"[^\w.@+-]", "-", wanted) or "sso"
    if base.startswith(NODE_USER_PREFIX):
        base = f"sso-{base}"[:limit]
    if not get_user_model().objects.filter(username=base).exists():
        return base
    suffix = hashlib.sha256(f"{claims['iss']} {subject}".encode()).hexdigest()[:10]
    return f"{base[: limit - 11]}-{suffix}"
