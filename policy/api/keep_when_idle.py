"""Keep a reservation when idle, or not (docs/policy.md, Keeping an idle booking): the PATCH of one
reservation's endpoint, added to capacity's view of it (capacity.api.views.register_reservation_methods)."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from capacity.port import ReservationSerializer, queue_places, render_reservation
from config.api.schema import errors

from ..keep_when_idle import parse_changes, set_keep_when_idle

# The reservation's path parameter, as capacity's API names it (capacity/api/views.py).
RESERVATION_ID = OpenApiParameter("reservation_id", OpenApiTypes.INT, OpenApiParameter.PATH)


class KeepWhenIdleSerializer(serializers.Serializer):
    """The one field a reservation's PATCH may change."""

    keepWhenIdle = serializers.BooleanField()


class KeepWhenIdleMethods:
    """One reservation's PATCH; capacity's view (a BerthAPIView: `self.scope`) answers the rest."""

    @extend_schema(
        operation_id="reservations_update",
        tags=["reservations"],
        summary="Keep a reservation when idle, or not",
        description=(
            "Only `keepWhenIdle` may be changed: true keeps the booking when idle (it is still marked"
            " Idle, never released for idleness), where its pool's policy allows it (400 naming the"
            " policy otherwise); false gives it back to the pool's idle release. Another tenant's"
            " reservation answers 404; one that has ended, 400."
        ),
        parameters=[RESERVATION_ID],
        request=KeepWhenIdleSerializer,
        responses={200: ReservationSerializer, **errors(400, 401, 404)},
    )
    def patch(self, request, reservation_id):
        keep = parse_changes(request.data)
        reservation = set_keep_when_idle(reservation_id, keep, scope=self.scope)
        return Response(render_reservation(reservation, self.scope, queue=queue_places([reservation])))
