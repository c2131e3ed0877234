"""Who the caller is: token or session authentication, and the operators-only permission.

The rules are an app's (config.access): config asks them, capacity.access answers.
"""

from __future__ import annotations

from rest_framework.authentication import SessionAuthentication, TokenAuthentication
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.permissions import BasePermission

from config.access import is_operator, token_refusal


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
        # One query, as DRF's own: the user and the token's lifetime row come with the token.
        try:
            token = self.get_model().objects.select_related("user", "lifetime").get(key=key)
        except self.get_model().DoesNotExist:
            raise AuthenticationFailed("Invalid token.") from None
        if not token.user.is_active:
            raise AuthenticationFailed("User inactive or deleted.")
        refusal = token_refusal(token)
        if refusal is not None:
            raise AuthenticationFailed(refusal)
        return token.user, token


# The settings' pair (token first, so an anonymous caller hears 401 with `WWW-Authenticate: Token`),
# with the stricter token check.
AUTHENTICATION_CLASSES = [StrictTokenAuthentication, SessionAuthentication]
