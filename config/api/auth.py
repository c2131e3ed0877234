"""Who the caller is: token or session authentication, and the operators-only permission.

The rules are an app's (config.access): config asks them, capacity.access answers.
"""

from __future__ import annotations

import functools

from django.db.models.expressions import RawSQL
from rest_framework.authentication import SessionAuthentication, TokenAuthentication
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.permissions import BasePermission

from config.access import is_operator, remember_who, token_refusal, who_sql


class IsOperator(BasePermission):
    """Let only operators through (anonymous callers are refused by IsAuthenticated first)."""

    message = "only operators may do this"

    def has_permission(self, request, view) -> bool:
        return is_operator(request.user)


class StrictTokenAuthentication(TokenAuthentication):
    """DRF's token authentication, refusing revoked and expired tokens, and keys Postgres could not
    even compare (a NUL), as 401s."""

    def authenticate_credentials(self, key):
        if "\x00" in key:
            raise AuthenticationFailed("Invalid token.")
        # One statement, as DRF's own: the user, the token's lifetime row, and what the rules ask of
        # the user (operator? which tenants?) come with the token.
        try:
            tokens = self.get_model().objects.select_related("user", "lifetime")
            token = tokens.annotate(**_who(self.get_model()._meta.db_table)).get(key=key)
        except self.get_model().DoesNotExist:
            raise AuthenticationFailed("Invalid token.") from None
        remember_who(token.user, *(getattr(token, name) for name in _WHO))
        if not token.user.is_active:
            raise AuthenticationFailed("User inactive or deleted.")
        refusal = token_refusal(token)
        if refusal is not None:
            raise AuthenticationFailed(refusal)
        return token.user, token


_WHO = ("berth_operator", "berth_slugs", "berth_ids")


@functools.cache
def _who(table: str) -> dict[str, RawSQL]:
    """Return the columns reading what the rules ask of the user of a token in `table`, by name."""
    return {name: RawSQL(sql, ()) for name, sql in zip(_WHO, who_sql(f'"{table}"."user_id"'), strict=True)}


# The settings' pair (token first, so an anonymous caller hears 401 with `WWW-Authenticate: Token`),
# with the stricter token check.
AUTHENTICATION_CLASSES = [StrictTokenAuthentication, SessionAuthentication]
