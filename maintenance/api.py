"""Maintenance windows: operators schedule, list, read and delete them; tenants read those on their nodes."""

from __future__ import annotations

from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import PermissionDenied
from rest_framework.response import Response

from capacity.port import MaintenanceWindow, is_operator, nodes_for
from config.api.base import BerthAPIView
from config.api.pages import position_of, queryset_source
from config.api.params import bool_param, text_param
from config.api.schema import errors

from . import windows as maintenance

WINDOW_STATES = ["scheduled", "active", "ended"]
WINDOW_ID = OpenApiParameter("window_id", int, OpenApiParameter.PATH, description="Window id.")


class MaintenanceWindowInputSerializer(serializers.Serializer):
    """A window to schedule: exactly one of nodes and pool."""

    nodes = serializers.ListField(child=serializers.CharField(), required=False, help_text="Node names.")
    pool = serializers.CharField(required=False, help_text="Every node of this pool (slug).")
    start = serializers.DateTimeField(help_text="ISO 8601 with a zone, or epoch ms; not in the past.")
    end = serializers.DateTimeField(help_text="After start; at most 366 days after it.")
    reason = serializers.CharField(required=False, max_length=200)
    move = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Move the overlapping bookings that have not started off, as drain does.",
    )


class MaintenanceOverlapSerializer(serializers.Serializer):
    """A booking on one of the window's nodes that overlaps it."""

    reservationId = serializers.IntegerField(allow_null=True)
    instanceId = serializers.CharField(allow_null=True)
    tenantId = serializers.CharField(allow_null=True)
    node = serializers.CharField()
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()


class MaintenanceWindowSerializer(serializers.Serializer):
    """A maintenance window."""

    id = serializers.IntegerField()
    nodes = serializers.ListField(child=serializers.CharField())
    pool = serializers.CharField(
        allow_null=True, help_text="The pool it was scheduled for, when one was named."
    )
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()
    reason = serializers.CharField()
    move = serializers.BooleanField()
    state = serializers.ChoiceField(choices=WINDOW_STATES)
    createdBy = serializers.CharField()


class MaintenanceScheduledSerializer(MaintenanceWindowSerializer):
    """A window just scheduled, with the bookings it overlaps and what it moved."""

    overlaps = MaintenanceOverlapSerializer(many=True)
    moved = serializers.ListField(child=serializers.IntegerField(), help_text="Reservations moved off.")
    waiting = serializers.ListField(
        child=serializers.IntegerField(), help_text="Reservations that found no room: RepairPending, retried."
    )
    left = serializers.IntegerField(
        help_text="Reservations left to the worker to move (past the request's bound)."
    )


def state_of(window: MaintenanceWindow, now) -> str:
    """Return scheduled, active or ended, by the clock."""
    if window.ends_at <= now:
        return "ended"
    return "active" if window.starts_at <= now else "scheduled"


def window_data(window: MaintenanceWindow, nodes: list[str], now) -> dict:
    """Return the API dict of a window."""
    return {
        "id": window.pk,
        "nodes": nodes,
        "pool": window.pool.slug if window.pool_id else None,
        "start": window.starts_at,
        "end": window.ends_at,
        "reason": window.reason,
        "move": window.move,
        "state": state_of(window, now),
        "createdBy": window.created_by,
    }


class _WindowsBase(BerthAPIView):
    def _visible(self) -> set[str] | None:
        """Return the node names a tenant user may read (None: an operator, every node)."""
        if self.scope.sees_every_tenant:
            return None
        return set(nodes_for(self.scope).values_list("name", flat=True))

    def _require_operator(self) -> None:
        if not is_operator(self.request.user):
            raise PermissionDenied("only operators schedule or delete maintenance windows")

    def _render(self, windows: list[MaintenanceWindow], visible: set[str] | None) -> list[dict]:
        now = timezone.now()
        names = maintenance.node_names(windows)
        return [
            window_data(w, [n for n in names[w.pk] if visible is None or n in visible], now) for w in windows
        ]


class WindowsView(_WindowsBase):
    """Schedule a window (operators) or list them."""

    @extend_schema(
        operation_id="maintenance_list",
        tags=["maintenance"],
        summary="List maintenance windows",
        description="Soonest first. Operators see every window; tenants those on nodes of pools they may use.",
        parameters=[
            OpenApiParameter("pool", str, description="Windows on this pool's nodes."),
            OpenApiParameter("node", str, description="Windows on this node."),
            OpenApiParameter("active", bool, description="true: running now; false: not running now."),
        ],
        responses={200: MaintenanceWindowSerializer(many=True), **errors(400, 401)},
    )
    def get(self, request):
        active = bool_param(request, "active") if "active" in request.query_params else None
        found = maintenance.windows(
            pool=text_param(request, "pool"), node=text_param(request, "node"), active=active
        )
        visible = self._visible()
        if visible is not None:
            found = found.filter(window_nodes__node__name__in=visible).distinct()
        return self.paginated(
            queryset_source(found.select_related("pool"), ("starts_at", "id")),
            lambda w: position_of(w, ("starts_at", "id")),
            lambda page: self._render(page, visible),
        )

    @extend_schema(
        operation_id="maintenance_create",
        tags=["maintenance"],
        summary="Schedule a maintenance window",
        description=(
            "Operators only. No new work is placed on the nodes inside the window; the answer lists the "
            "bookings it overlaps. With move, those that have not started are moved off as drain moves "
            "them. The worker puts the nodes in maintenance at the start and takes out at the end those it "
            "put in. Bad input (a window in the past, end before start, unknown nodes, both or neither of "
            "nodes and pool) is a 400 INVALID_INPUT naming the field, and nothing is written."
        ),
        request=MaintenanceWindowInputSerializer,
        responses={201: MaintenanceScheduledSerializer, **errors(400, 401, 403)},
    )
    def post(self, request):
        self._require_operator()
        user = request.user
        result = maintenance.schedule(request.data, by=getattr(user, "username", "") or "")
        now = timezone.now()
        data = window_data(result.window, maintenance.node_names([result.window])[result.window.pk], now)
        data["overlaps"] = [
            {
                "reservationId": o.reservation,
                "instanceId": o.instance,
                "tenantId": o.tenant,
                "node": o.node,
                "start": o.start,
                "end": o.end,
            }
            for o in result.overlaps
        ]
        data.update(moved=result.moved, waiting=result.waiting, left=result.left)
        return Response(MaintenanceScheduledSerializer(data).data, status=201)


class WindowView(_WindowsBase):
    """One window: read it, or delete it (operators)."""

    @extend_schema(
        operation_id="maintenance_get",
        tags=["maintenance"],
        summary="Get a maintenance window",
        parameters=[WINDOW_ID],
        responses={200: MaintenanceWindowSerializer, **errors(401, 404)},
    )
    def get(self, request, window_id):
        found = maintenance.window(window_id)
        visible = self._visible()
        data = self._render([found], visible)[0]
        if visible is not None and not data["nodes"]:
            maintenance.window("none")  # NOT_FOUND: not a window the caller may see
        return Response(MaintenanceWindowSerializer(data).data)

    @extend_schema(
        operation_id="maintenance_delete",
        tags=["maintenance"],
        summary="Delete a maintenance window",
        description="Operators only. A running window ends now: the nodes it put in maintenance come out.",
        parameters=[WINDOW_ID],
        responses={204: None, **errors(401, 403, 404)},
    )
    def delete(self, request, window_id):
        self._require_operator()
        maintenance.cancel(window_id)
        return Response(status=204)
