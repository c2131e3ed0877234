"""The permission of the endpoints a node agent calls; the rule is capacity.access's (through the port)."""

from __future__ import annotations

from rest_framework.permissions import BasePermission

from capacity.port import node_call_refusal


class IsOperatorOrTheNode(BasePermission):
    """Let operators through, and a node's own credential for its own node (BerthAPIView checks which)."""

    message = "only operators may do this"

    def has_permission(self, request, view) -> bool:
        refusal = node_call_refusal(
            request.user, view.kwargs.get("name"), request.headers.get("User-Agent", "")
        )
        if refusal is not None:
            self.message = refusal
            return False
        return True
