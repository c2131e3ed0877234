"""POST /api/v1/nodes/{name}/drain: cordon, move what has not started, list what runs until when."""

from __future__ import annotations

from rest_framework import serializers
from rest_framework.response import Response

from capacity.services.drain import drain
from inventory.errors import InventoryError

from .nodes import OperatorView, action_schema, body_object, body_text

DRAIN_STATES = ["draining", "drained"]


class DrainInputSerializer(serializers.Serializer):
    """Why the node is drained (shown on the node page)."""

    reason = serializers.CharField(required=False, max_length=200)


class RunningSerializer(serializers.Serializer):
    """A booking that runs on the node until it ends."""

    reservationId = serializers.IntegerField(allow_null=True)
    instanceId = serializers.CharField(allow_null=True)
    end = serializers.DateTimeField()


class DrainSerializer(serializers.Serializer):
    """What a drain did."""

    node = serializers.CharField()
    state = serializers.ChoiceField(choices=DRAIN_STATES)
    until = serializers.DateTimeField(allow_null=True, help_text="When the last running booking ends.")
    moved = serializers.ListField(child=serializers.IntegerField(), help_text="Reservations moved off.")
    waiting = serializers.ListField(
        child=serializers.IntegerField(),
        help_text="Reservations that found no room: they stay, RepairPending.",
    )
    running = RunningSerializer(many=True)


def drain_data(result) -> dict:
    """Return the API dict of a drain result."""
    return {
        "node": result.node,
        "state": "draining" if result.running else "drained",
        "until": result.until,
        "moved": result.moved,
        "waiting": result.waiting,
        "running": [
            {"reservationId": r.reservation, "instanceId": r.instance, "end": r.ends_at}
            for r in result.running
        ],
    }


class DrainView(OperatorView):
    @action_schema(
        "nodes_drain",
        "Drain a node: cordon it, move every booking that has not started to other nodes, list the running ones",
        DrainInputSerializer,
        response=DrainSerializer,
    )
    def post(self, request, name):
        data = body_object(request.data)
        unknown = sorted(set(data) - {"reason"})
        if unknown:
            raise InventoryError("INVALID_INPUT", f"unknown field {unknown[0]!r} (expected reason)")
        reason = body_text(data, "reason", required=False)
        return Response(DrainSerializer(drain_data(drain(name, reason=reason))).data)
