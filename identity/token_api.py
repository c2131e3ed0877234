"""The API's token endpoints: a caller revokes the token it holds; an operator issues a node its credential."""

from __future__ import annotations

from collections.abc import Mapping

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.authtoken.models import Token
from rest_framework.exceptions import NotFound
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from config.api.auth import IsOperator
from config.api.base import BerthAPIView
from config.api.schema import errors
from config.errors import INVALID_INPUT
from identity.tokens import (
    TokenError,
    issue_node_token,
    node_key_works,
    replaced_key_note,
    revoke_token,
    token_expiry,
)


class RevokeOwnTokenView(BerthAPIView):
    """Revoke the token this request came with (or, signed in by session, the user's token)."""

    @extend_schema(
        operation_id="tokens_revoke",
        tags=["tokens"],
        summary="Revoke the token you call with",
        description=(
            "Takes no body (or {}); signed in by session, it revokes your token. A field answers 400;"
            " a session caller without a token, 404."
        ),
        request=None,
        responses={
            200: inline_serializer("TokenRevoked", {"revokedAt": serializers.DateTimeField()}),
            **errors(400, 401, 404),
        },
    )
    def post(self, request):
        # It revokes the caller's own token and takes no field: {"user": "globex"} must not read as
        # revoking globex's token while it revokes the caller's.
        data = request.data
        if not isinstance(data, Mapping) or data:
            field = next(iter(data), None) if isinstance(data, Mapping) else None
            raise TokenError(
                INVALID_INPUT,
                f"{field} is not a known field (token/revoke takes none: it revokes your own token)"
                if field is not None
                else "the body must be empty or {} (token/revoke revokes your own token)",
            )
        token = (
            request.auth
            if isinstance(request.auth, Token)
            else Token.objects.filter(user=request.user).first()
        )
        if token is None:
            raise NotFound("you have no API token")
        revoked_at = revoke_token(token, by=f"{request.user.get_username()} (API)")
        return Response({"revokedAt": revoked_at.isoformat().replace("+00:00", "Z")})


class NodeTokenView(BerthAPIView):
    """POST /api/v1/nodes/NODE/token: issue the node its own credential (operators); the key is shown once.

    The node's previous key stops working at once: the answer says so when there was one.
    """

    permission_classes = [IsAuthenticated, IsOperator]

    @extend_schema(
        operation_id="nodes_token",
        tags=["nodes"],
        summary="Issue a node its own API credential (the previous key stops working at once)",
        request=None,
        responses={
            200: inline_serializer(
                "NodeToken",
                {
                    "key": serializers.CharField(),
                    "user": serializers.CharField(),
                    "expiresAt": serializers.DateTimeField(),
                    "replaced": serializers.BooleanField(
                        help_text="The node held a working key: it stopped working with this answer."
                    ),
                    "message": serializers.CharField(),
                },
            ),
            **errors(401, 403, 404),
        },
    )
    def post(self, request, name):
        replaced = node_key_works(name)
        token = issue_node_token(name)
        return Response(
            {
                "key": token.key,
                "user": token.user.get_username(),
                "expiresAt": token_expiry(token),
                "replaced": replaced,
                "message": replaced_key_note(name, replaced),
            }
        )
