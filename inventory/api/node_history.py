"""GET /api/v1/nodes/{name}/history: who changed the node, its taints and labels, when and why."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.permissions import IsAuthenticated

from config.api.auth import IsOperator
from config.api.base import BerthAPIView
from config.api.pages import plain
from config.api.schema import errors
from config.replica import replica_reads
from inventory.node_changelog import entries, node_history

from .nodes import NODE_NAME, existing_node
from .serializers import HistoryEntrySerializer


class NodeHistoryView(BerthAPIView):
    """A node's history, newest first, paged like every list."""

    permission_classes = [IsAuthenticated, IsOperator]

    @extend_schema(
        operation_id="nodes_history",
        tags=["nodes"],
        summary="List a node's history",
        description=(
            "Every change of the node, its taints and its labels, newest first: when, who (a user, a "
            'command such as "command:cordon", or "system"), what and why. Operators only.'
        ),
        parameters=[NODE_NAME],
        responses={200: HistoryEntrySerializer(many=True), **errors(400, 401, 403, 404)},
    )
    @replica_reads
    def get(self, request, name):
        node = existing_node(name)

        def source(position, backwards, limit):
            return list(node_history(node, position, older=not backwards)[:limit])

        return self.paginated(
            source,
            lambda row: (plain(row[1]), row[0]),
            lambda page: HistoryEntrySerializer(entries(page), many=True).data,
        )
