"""Approve or deny a booking awaiting approval (docs/policy.md, Approvals): operators only."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from capacity.port import ReservationSerializer, may_approve, render_reservation
from config.api.base import BerthAPIView
from config.api.schema import errors

from ..approvals import approve, deny

# The reservation's path parameter, as capacity's API names it (capacity/api/views.py).
RESERVATION_ID = OpenApiParameter("reservation_id", OpenApiTypes.INT, OpenApiParameter.PATH)


class DenySerializer(serializers.Serializer):
    """Why the booking is denied: its owner reads it in the Released condition."""

    reason = serializers.CharField(max_length=200, help_text="Why (1 to 200 characters).")


class ApproveView(BerthAPIView):
    """Approve a booking awaiting approval."""

    @extend_schema(
        operation_id="reservations_approve",
        tags=["reservations"],
        summary="Approve a booking awaiting approval",
        description=(
            "Operators only (a tenant's own reservation answers 403, another tenant's 404). Its"
            " AwaitingApproval condition becomes Approved and the node agent hands it out. A booking"
            " that does not await approval (approved already, denied, released) answers 409 CONFLICT."
        ),
        parameters=[RESERVATION_ID],
        request=None,
        responses={200: ReservationSerializer, **errors(401, 403, 404, 409)},
    )
    def post(self, request, reservation_id):
        done = approve(
            reservation_id,
            by=request.user.get_username(),
            operator=may_approve(request.user),
            scope=self.scope,
        )
        return Response(render_reservation(done, self.scope))


class DenyView(BerthAPIView):
    """Deny a booking awaiting approval."""

    @extend_schema(
        operation_id="reservations_deny",
        tags=["reservations"],
        summary="Deny a booking awaiting approval",
        description=(
            'Operators only, with {"reason"}. The booking is released now; its Released condition'
            " (reason ApprovalDenied) says who denied it and why. No reason answers 400; a booking that"
            " does not await approval answers 409 CONFLICT; a tenant's own reservation 403, another's 404."
        ),
        parameters=[RESERVATION_ID],
        request=DenySerializer,
        responses={200: ReservationSerializer, **errors(400, 401, 403, 404, 409)},
    )
    def post(self, request, reservation_id):
        reason = request.data.get("reason") if isinstance(request.data, dict) else None
        done = deny(
            reservation_id,
            reason,
            by=request.user.get_username(),
            operator=may_approve(request.user),
            scope=self.scope,
        )
        return Response(render_reservation(done, self.scope))
