"""Nodes: list and detail, operator actions (taints, dedication, labels), topology.

A node agent's report and assignments are the agents app's (agents/report.py, agents/api.py).

Cordon, uncordon, maintenance mode and drain take a node out of service: the maintenance app's
(maintenance/node_api.py), built on OperatorView and action_schema below through capacity.port.

Who sees which nodes: operators see every node; a tenant user sees the nodes of the pools its
tenants may use (services.pools_for), read-only. Actions and ingestion need an operator (403).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from capacity import services
from capacity.render import node_detail, with_summary_rows
from config.api.auth import IsOperator
from config.api.base import BerthAPIView
from config.api.pages import position_of, queryset_source
from config.api.params import text_param
from config.api.parsers import PlainTextParser, StrictJSONParser
from config.api.schema import errors
from config.replica import replica_reads
from inventory import services as inventory
from inventory.api.nodes import NODE_NAME, existing_node
from inventory.api.serializers import (
    DedicateInputSerializer,
    LabelInputSerializer,
    NodeDetailSerializer,
    NodeSummarySerializer,
    ReasonInputSerializer,
    TaintInputSerializer,
    TopologyInputSerializer,
    TopologyResultSerializer,
    node_summary,
)
from inventory.errors import InventoryError
from inventory.filtersets import STATE_CHOICES, filter_nodes
from inventory.ingest import apply_node_report
from inventory.models import Device, Node, NodeTaint
from inventory.trust import Reporter

NODE_FILTERS = ("pool", "state", "label", "free_gpus", "q")


def device_counts(nodes: list[Node]) -> dict[int, dict[str, int]]:
    """Return atoms per device class of each node, in one query (unverified devices count nowhere)."""
    counts: dict[int, dict[str, int]] = defaultdict(dict)
    rows = (
        Device.objects.filter(node__in=nodes, verified=True)
        .values_list("node_id", "device_class")
        .order_by("node_id", "device_class")
    )
    for node_id, device_class in rows:
        counts[node_id][device_class] = counts[node_id].get(device_class, 0) + 1
    return counts


def summaries_renderer(scope: services.Scope):
    """Return a function that renders a page of nodes as the caller sees them."""

    def render(nodes: list[Node]) -> list[dict]:
        counts = device_counts(nodes)
        return NodeSummarySerializer(
            [
                node_summary(n, device_counts=counts[n.pk], free_gpus_now=n.free_now, viewer=scope)
                for n in nodes
            ],
            many=True,
        ).data

    return render


def body_object(data: Any) -> dict:
    if not isinstance(data, dict):
        raise InventoryError("INVALID_INPUT", "the request must be a JSON object")
    return data


def action_body(data: Any, fields: tuple[str, ...]) -> dict:
    """Return an action's JSON object, refusing a field it does not take (as reservations do)."""
    data = body_object(data)
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise InventoryError("INVALID_INPUT", f"unknown field {unknown[0]!r} (expected {', '.join(fields)})")
    return data


def reason(data: dict) -> str:
    """Return the action's optional reason (the service checks its length)."""
    return body_text(data, "reason", required=False)


def body_text(data: dict, name: str, *, required: bool = True, default: str = "") -> str:
    if name not in data:
        if required:
            raise InventoryError("INVALID_INPUT", f"{name} is required")
        return default
    value = data[name]
    if not isinstance(value, str):
        raise InventoryError("INVALID_INPUT", f"{name} must be a string")
    return value


KEY = OpenApiParameter("key", str, OpenApiParameter.PATH, description="Taint or label key (may contain '/').")


class NodesView(BerthAPIView):
    """The nodes the caller may read, filtered."""

    @extend_schema(
        operation_id="nodes_list",
        tags=["nodes"],
        summary="List nodes",
        description=(
            "Operators see every node; tenants the nodes of the pools they may use. Filters: pool "
            "(slug), state, label (key or key=value), free_gpus (at least n GPUs free now), q (name)."
        ),
        parameters=[
            OpenApiParameter("pool", str, description="Pool slug."),
            OpenApiParameter(
                "state", str, enum=STATE_CHOICES, description="Nodes in this state (among others)."
            ),
            OpenApiParameter("label", str, description="key, or key=value."),
            OpenApiParameter(
                "free_gpus", int, description="At least this many GPUs the caller could book now."
            ),
            OpenApiParameter("q", str, description="Part of the node name."),
        ],
        responses={200: NodeSummarySerializer(many=True), **errors(400, 401, 404)},
    )
    @replica_reads
    def get(self, request):
        nodes = services.nodes_for(self.scope)
        pool = text_param(request, "pool")
        if pool is not None:
            nodes = nodes.filter(pool__slug=pool)
        params = {k: request.query_params.get(k, "") for k in NODE_FILTERS}
        nodes = filter_nodes(nodes, params, self.scope)
        return self.paginated(
            queryset_source(with_summary_rows(nodes, self.scope), ("name",)),
            lambda row: position_of(row, ("name",)),
            summaries_renderer(self.scope),
        )


class NodeView(BerthAPIView):
    """One node with its devices, links, labels, taints, conditions and resources."""

    @extend_schema(
        operation_id="nodes_get",
        tags=["nodes"],
        summary="Get a node",
        parameters=[NODE_NAME],
        responses={200: NodeDetailSerializer, **errors(401, 404)},
    )
    @replica_reads
    def get(self, request, name):
        return Response(node_detail(name, self.scope))


class OperatorView(BerthAPIView):
    """A node action: operators only; answers the node as it is afterwards."""

    permission_classes = [IsAuthenticated, IsOperator]


def action_schema(operation_id: str, summary: str, request: Any = None, **kw: Any):
    return extend_schema(
        operation_id=operation_id,
        tags=["nodes"],
        summary=summary,
        description=f"{summary}. Operators only.",
        parameters=[NODE_NAME, *kw.pop("parameters", [])],
        request=request,
        responses={
            200: kw.pop("response", NodeDetailSerializer),
            **errors(*kw.pop("codes", (400, 401, 403, 404))),
        },
        **kw,
    )


class TaintsView(OperatorView):
    @action_schema("nodes_taint", "Add or replace a taint", TaintInputSerializer)
    def post(self, request, name):
        data = action_body(request.data, ("key", "value", "effect", "reason"))
        inventory.add_taint(
            name,
            body_text(data, "key"),
            body_text(data, "value", required=False),
            body_text(data, "effect", required=False, default=NodeTaint.Effect.NO_SCHEDULE),
            reason=reason(data),
        )
        return Response(node_detail(name))


class TaintView(OperatorView):
    @action_schema("nodes_untaint", "Remove a taint", ReasonInputSerializer, parameters=[KEY])
    def delete(self, request, name, key):
        data = action_body(request.data, ("reason",))
        if not inventory.remove_taint(name, key, reason=reason(data)):
            raise InventoryError("NOT_FOUND", f"node {name} has no taint {key}")
        return Response(node_detail(name))


class DedicateView(OperatorView):
    @action_schema(
        "nodes_dedicate", "Dedicate a node to a tenant, or end the dedication", DedicateInputSerializer
    )
    def post(self, request, name):
        data = action_body(request.data, ("tenant", "reason"))
        if "tenant" not in data:
            raise InventoryError("INVALID_INPUT", "tenant is required: a tenant slug, or null")
        tenant = data["tenant"]
        if tenant is not None and (not isinstance(tenant, str) or not tenant):
            raise InventoryError("INVALID_INPUT", "tenant must be a tenant slug or null")
        existing_node(name)
        inventory.dedicate(name, tenant, reason=reason(data))
        return Response(node_detail(name))


class LabelsView(OperatorView):
    @action_schema(
        "nodes_label", "Set an operator label (bc.dev/ keys are inventory's)", LabelInputSerializer
    )
    def post(self, request, name):
        data = action_body(request.data, ("key", "value", "reason"))
        inventory.set_label(
            name, body_text(data, "key"), body_text(data, "value", required=False), reason=reason(data)
        )
        return Response(node_detail(name))


class LabelView(OperatorView):
    @action_schema("nodes_unlabel", "Remove an operator label", ReasonInputSerializer, parameters=[KEY])
    def delete(self, request, name, key):
        data = action_body(request.data, ("reason",))
        if not inventory.remove_label(name, key, reason=reason(data)):
            raise InventoryError("NOT_FOUND", f"node {name} has no label {key}")
        return Response(node_detail(name))


class TopologyView(OperatorView):
    parser_classes = [PlainTextParser, StrictJSONParser]

    @action_schema(
        "nodes_topology",
        "Import the GPU links of `nvidia-smi topo -m` (text/plain, or JSON {text})",
        {"text/plain": {"type": "string", "minLength": 1}, "application/json": TopologyInputSerializer},
        response=TopologyResultSerializer,
    )
    def post(self, request, name):
        data = request.data
        if isinstance(data, dict):
            data = body_text(data, "text")
        if not isinstance(data, str):
            raise InventoryError("INVALID_INPUT", 'send the matrix as text/plain, or as JSON {"text": ...}')
        by = Reporter.operator(request.user.get_username())
        result = apply_node_report(existing_node(name), {"topology": data}, by=by)
        return Response(TopologyResultSerializer({"links": result.links}).data)
