"""Who the caller is: an operator (staff, or in the "operators" group) or a tenant user, and their scope.

The rules live in capacity/access.py, shared with the browser views.
"""

from __future__ import annotations

from rest_framework.authentication import SessionAuthentication, TokenAuthentication
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.permissions import BasePermission

from capacity.access import is_operator


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
