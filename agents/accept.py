"""Accepting hardware a node's agent reported: `POST /api/v1/nodes/NODE/devices/accept` (operators).

A device first seen in a report after the node's first one waits unverified (inventory.trust) until
an operator accepts it here; the answer is the node as the API shows it (capacity.render, through
the port)."""

from __future__ import annotations

from rest_framework.response import Response

from capacity.port import OperatorView, action_body, action_schema, node_detail, reason
from inventory.api.nodes import existing_node
from inventory.api.serializers import AcceptDevicesInputSerializer, AcceptDevicesResultSerializer
from inventory.errors import InventoryError
from inventory.trust import accept_devices

MAX_UUIDS = 256  # a node holds at most 256 devices


class AcceptDevicesView(OperatorView):
    @action_schema(
        "nodes_accept_devices",
        "Accept devices the node reported after its first report (all, or the uuids named): they "
        "become verified and bookable",
        AcceptDevicesInputSerializer,
        response=AcceptDevicesResultSerializer,
    )
    def post(self, request, name):
        data = action_body(request.data if request.data else {}, ("uuids", "reason"))
        uuids = data.get("uuids")
        if uuids is not None and (
            not isinstance(uuids, list)
            or not uuids
            or len(uuids) > MAX_UUIDS
            or not all(isinstance(u, str) and 0 < len(u) <= 100 for u in uuids)
        ):
            raise InventoryError(
                "INVALID_INPUT",
                f"uuids must be a list of 1 to {MAX_UUIDS} device uuids (strings), or left out",
            )
        existing_node(name)
        accepted = accept_devices(name, uuids, reason=reason(data))
        return Response({"accepted": accepted, "node": node_detail(name)})
