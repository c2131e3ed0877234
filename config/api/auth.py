"""Who the caller is: an operator (staff, or in the "operators" group) or a tenant user, and their scope.

The rules live in capacity/access.py, shared with the browser views.
"""

from __future__ import annotations

from rest_framework.authentication import SessionAuthentication, TokenAuthentication
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.permissions import BasePermission

from capacity.access import is_operator, node_of
from capacity.services.tokens import token_refusal

# What the reference agent (agent/berth_agent.py) sends: its requests are told apart by it.
AGENT_USER_AGENT = "berth-agent/"


class IsOperatorOrTheNode(BasePermission):
    """Let operators through, and a node's own credential for its own node (BerthAPIView checks which).

    The node agent is refused an operator's token: an agent holding one could act on every node
    and every booking, so it must use the node's own credential, and the refusal says how to get one.
    """

    message = "only operators may do this"

    def has_permission(self, request, view) -> bool:
        if node_of(request.user) is not None:
            return True
        node = view.kwargs.get("name") or "NODE"
        issue = f"manage.py issue_token --node {node} (or, as an operator, POST /api/v1/nodes/{node}/token)"
        if not is_operator(request.user):
            # A tenant's token in an agent's token file, most likely: say what the agent needs.
            self.message = (
                f"only operators and node {node}'s own credential may do this; "
                f"a node agent needs that credential: {issue}"
            )
            return False
        if request.headers.get("User-Agent", "").startswith(AGENT_USER_AGENT):
            self.message = (
                f"a node agent may not use an operator's token; give it node {node}'s own credential: {issue}"
            )
            return False
        return True


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
