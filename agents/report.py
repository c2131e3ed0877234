"""The node report: what a node's agent posts (its devices, system labels, topology, processes'
owners), with the node's own credential; operators may post one for any node."""

from __future__ import annotations

from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework.exceptions import ParseError
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from capacity.port import node_of, reported
from config.api.base import BerthAPIView
from config.api.schema import errors
from inventory.api.nodes import NODE_NAME, existing_node
from inventory.api.serializers import NodeReportInputSerializer, ReportResultSerializer
from inventory.errors import IngestError
from inventory.ingest import apply_node_report
from inventory.trust import Reporter, record_refusal

from .permissions import IsOperatorOrTheNode

# Worded as capacity's operator actions word theirs (capacity.api.nodes.action_schema): the schema
# keeps the operation it had there.
SUMMARY = "Apply a node report: devices, system labels and topology, each section the whole truth"


class ReportView(BerthAPIView):
    # The node's own credential reports for its node (its agent); operators for any node.
    permission_classes = [IsAuthenticated, IsOperatorOrTheNode]
    for_nodes = True

    @extend_schema(
        operation_id="nodes_report",
        tags=["nodes"],
        summary=SUMMARY,
        description=f"{SUMMARY}. Operators only.",
        parameters=[NODE_NAME],
        request=NodeReportInputSerializer,
        responses={200: ReportResultSerializer, **errors(400, 401, 403, 404, 409)},
    )
    def post(self, request, name):
        node = existing_node(name)
        # The node's own credential is untrusted (inventory.trust); an operator has full rights.
        agent = node_of(request.user) is not None
        by = (Reporter.node_credential if agent else Reporter.operator)(request.user.get_username())
        try:
            data = request.data
        except ParseError as exc:  # a body that is no JSON is a refused report too
            record_refusal(node, IngestError(f"report: {exc.detail}"), by)
            raise
        result = apply_node_report(node, data, by=by, reported_at=timezone.now())
        if result.samples and isinstance(data, dict) and "processOwners" in data:
            # Committed: the owner's processes on lent GPUs take them back now, not a round later.
            reported(node.pk)  # a REPORTED rule (policy.reclaim_processes), through capacity.rules
        return Response(ReportResultSerializer(result.as_json()).data)
