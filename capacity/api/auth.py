"""Who the caller is: an operator (staff, or in the "operators" group) or a tenant user, and their scope.

The browser views (config/web.py) apply the same rules; both read only `is_staff`, the group and
`Tenant.users`.
"""

from __future__ import annotations

from rest_framework.authentication import SessionAuthentication, TokenAuthentication
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.permissions import BasePermission

from capacity.services import EVERYONE, Scope

OPERATORS_GROUP = "operators"


def is_operator(user) -> bool:
    """Return whether the user runs the fleet: staff, or a member of the "operators" group."""
    if not user or not user.is_authenticated:
        return False
    if user.is_staff:
        return True
    # Cached on the user object: one request asks several times.
    if not hasattr(user, "_berth_api_operator"):
        user._berth_api_operator = user.groups.filter(name=OPERATORS_GROUP).exists()
    return user._berth_api_operator


def scope_for(user) -> Scope:
    """Return whose reservations the user may touch: everyone for operators, else their tenants."""
    if is_operator(user):
        return EVERYONE
    if not hasattr(user, "_berth_api_scope"):
        slugs = user.tenants.values_list("slug", flat=True) if user.is_authenticated else []
        user._berth_api_scope = Scope(frozenset(slugs))
    return user._berth_api_scope


class IsOperator(BasePermission):
    """Let only operators through (anonymous callers are refused by IsAuthenticated first)."""

    message = "only operators may do this"

    def has_permission(self, request, view) -> bool:
        return is_operator(request.user)


class StrictTokenAuthentication(TokenAuthentication):
    """DRF's token authentication, refusing keys Postgres could not even compare (a NUL) as 401s."""

    def authenticate_credentials(self, key):
        if "\x00" in key:
            raise AuthenticationFailed("Invalid token.")
        return super().authenticate_credentials(key)


# The settings' pair (token first, so an anonymous caller hears 401 with `WWW-Authenticate: Token`),
# with the stricter token check.
AUTHENTICATION_CLASSES = [StrictTokenAuthentication, SessionAuthentication]
