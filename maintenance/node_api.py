"""Taking a node out of service from the API: cordon, uncordon, maintenance mode and drain.

POST /api/v1/nodes/{name}/cordon, /uncordon, /maintenance and /drain, operators only, among
capacity's node actions (the same schema helpers, the `nodes` tag): inventory changes the node
(in maintenance it is unusable: BookingRepair moves what it holds as the change commits); drain
moves what has not started itself (maintenance.drain) and lists what runs until when.
"""

from __future__ import annotations

from rest_framework import serializers
from rest_framework.response import Response

from capacity.port import OperatorView, action_body, action_schema, body_text, node_detail
from inventory import services as inventory
from inventory.api.serializers import MaintenanceInputSerializer, ReasonInputSerializer
from inventory.errors import InventoryError

from .drain import drain

DRAIN_STATES = ["draining", "drained"]


class CordonView(OperatorView):
    @action_schema("nodes_cordon", "Cordon a node: no new placements; what runs stays", ReasonInputSerializer)
    def post(self, request, name):
        data = action_body(request.data, ("reason",))
        inventory.cordon(name, reason=body_text(data, "reason", required=False))
        return Response(node_detail(name))


class UncordonView(OperatorView):
    @action_schema("nodes_uncordon", "Uncordon a node (ending a drain)", ReasonInputSerializer)
    def post(self, request, name):
        data = action_body(request.data, ("reason",))
        inventory.uncordon(name, reason=body_text(data, "reason", required=False))
        return Response(node_detail(name))


class MaintenanceView(OperatorView):
    @action_schema(
        "nodes_maintenance",
        "Put a node in maintenance ({on: true}) or take it out",
        MaintenanceInputSerializer,
    )
    def post(self, request, name):
        data = action_body(request.data, ("on", "reason"))
        if not isinstance(data.get("on"), bool):
            raise InventoryError("INVALID_INPUT", "on must be true or false")
        inventory.set_maintenance(name, data["on"], reason=body_text(data, "reason", required=False))
        return Response(node_detail(name))


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
        data = action_body(request.data, ("reason",))
        reason = body_text(data, "reason", required=False)
        return Response(DrainSerializer(drain_data(drain(name, reason=reason))).data)
