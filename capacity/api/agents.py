"""What a node's agent calls with the node's own credential: its assignments (and the node report,
in nodes.py); and the operators' endpoint that issues a node its credential."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from capacity.models.tokens import token_expiry
from capacity.services.assignments import assignments
from capacity.services.tokens import issue_node_token
from config.api.auth import IsOperator, IsOperatorOrTheNode
from config.api.base import BerthAPIView
from config.api.schema import errors


class AssignmentsView(BerthAPIView):
    """GET /api/v1/nodes/NODE/assignments: each device's reservation now and next, and the node's state.

    For operators and the node's own credential. It carries an ETag; `If-None-Match` with the
    current one answers 304 Not Modified.
    """

    permission_classes = [IsAuthenticated, IsOperatorOrTheNode]
    for_nodes = True

    @extend_schema(
        operation_id="nodes_assignments",
        tags=["nodes"],
        summary="A node's devices with the reservation holding each now and the next one",
        responses={
            200: inline_serializer(
                "NodeAssignments",
                {
                    "node": serializers.CharField(),
                    "asOf": serializers.DateTimeField(),
                    "state": serializers.DictField(),
                    "devices": serializers.ListField(child=serializers.DictField()),
                },
            ),
            304: None,
            **errors(401, 403, 404),
        },
    )
    def get(self, request, name):
        body, tag = assignments(name)
        if request.headers.get("If-None-Match") == tag:
            return Response(status=304, headers={"ETag": tag})
        return Response(body, headers={"ETag": tag})


class NodeTokenView(BerthAPIView):
    """POST /api/v1/nodes/NODE/token: issue the node its own credential (operators); the key is shown once."""

    permission_classes = [IsAuthenticated, IsOperator]

    @extend_schema(
        operation_id="nodes_token",
        tags=["nodes"],
        summary="Issue a node its own API credential (replacing the old one)",
        request=None,
        responses={
            200: inline_serializer(
                "NodeToken",
                {
                    "key": serializers.CharField(),
                    "user": serializers.CharField(),
                    "expiresAt": serializers.DateTimeField(),
                },
            ),
            **errors(401, 403, 404),
        },
    )
    def post(self, request, name):
        token = issue_node_token(name)
        return Response(
            {"key": token.key, "user": token.user.get_username(), "expiresAt": token_expiry(token)}
        )
