"""Who the caller is: token or session authentication, and the operators-only permission.

The rules are an app's (config.access): config asks them, capacity.access answers (identity.tokens
whether a token is refused).
"""

from __future__ import annotations

import functools

from django.db import connections, router
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
        # One statement, as DRF's own: the token with its user, its lifetime row, and what the rules
        # ask of the user (operator? which tenants?).
        token = _read_token(self.get_model(), key)
        if token is None:
            raise AuthenticationFailed("Invalid token.")
        if not token.user.is_active:
            raise AuthenticationFailed("User inactive or deleted.")
        refusal = token_refusal(token)
        if refusal is not None:
            raise AuthenticationFailed(refusal)
        return token.user, token


def _read_token(model, key: str):
    """Return the token with this key, its user and lifetime row loaded and the user's rules kept, or None."""
    sql, parts = _token_statement(model)
    with connections[router.db_for_read(model)].cursor() as cursor:
        cursor.execute(sql, [key])
        row = cursor.fetchone()
        alias = cursor.db.alias
    if row is None:
        return None
    loaded, at = [], 0
    for part, fields in parts:
        values, at = row[at : at + len(fields)], at + len(fields)
        loaded.append(part.from_db(alias, fields, values) if values[0] is not None else None)
    token, user, lifetime = loaded
    token.user = user
    model._meta.get_field("lifetime").set_cached_value(token, lifetime)  # None: it has no row
    remember_who(user, *row[at:])
    return token


@functools.cache
def _token_statement(model) -> tuple[str, list]:
    """Return the statement reading a token, its user, its lifetime row and the user's rules; its parts."""
    user_model = model._meta.get_field("user").related_model
    lifetime = model._meta.get_field("lifetime")  # the row identity keeps beside each token
    parts = [(model, "t"), (user_model, "u"), (lifetime.related_model, "l")]
    columns = ", ".join(f"{a}.{f.column}" for m, a in parts for f in m._meta.concrete_fields)
    pk = model._meta.pk.column
    sql = (
        f"SELECT {columns}, {', '.join(who_sql('t.user_id'))} FROM {model._meta.db_table} t"
        f" JOIN {user_model._meta.db_table} u ON u.id = t.user_id"
        f" LEFT JOIN {lifetime.related_model._meta.db_table} l ON l.{lifetime.field.column} = t.{pk}"
        f" WHERE t.{pk} = %s"
    )
    return sql, [(m, [f.attname for f in m._meta.concrete_fields]) for m, _ in parts]


# The settings' pair (token first, so an anonymous caller hears 401 with `WWW-Authenticate: Token`),
# with the stricter token check.
AUTHENTICATION_CLASSES = [StrictTokenAuthentication, SessionAuthentication]
