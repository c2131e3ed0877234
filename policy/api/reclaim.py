"""Reclaim a reservation's lent GPUs (docs/policy.md, Lending): the owner takes them back from spot work."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from capacity.port import ReservationSerializer, render_reservation
from config.api.base import BerthAPIView
from config.api.schema import errors

from ..reclaim import reclaim

# The reservation's path parameter, as capacity's API names it (capacity/api/views.py).
RESERVATION_ID = OpenApiParameter("reservation_id", OpenApiTypes.INT, OpenApiParameter.PATH)


class ReclaimedSerializer(serializers.Serializer):
    """What a reclaim did."""

    reservation = ReservationSerializer()
    reclaimed = serializers.IntegerField(help_text="Spot reservations taken back now (0: nothing to do).")
    preemptAt = serializers.DateTimeField(
        allow_null=True, help_text="With the pool's spotNotice: when the lent GPUs are the owner's alone."
    )
    detail = serializers.CharField()


class ReclaimView(BerthAPIView):
    """Take an idle booking's lent GPUs back from the spot work running on them."""

    @extend_schema(
        operation_id="reservations_reclaim",
        tags=["reservations"],
        summary="Reclaim a reservation's lent GPUs",
        description=(
            "The spot work lent this reservation's idle GPUs is preempted now and its Idle condition"
            " ends. Where the pool has a spotNotice, the spot work is given notice instead and keeps"
            " the GPUs, shared with the owner, until `preemptAt` (null without a notice); a second"
            " reclaim meanwhile gives no second notice. A reservation that lends nothing answers 200"
            " with nothing to do (`reclaimed`: 0); another tenant's reservation answers 404."
        ),
        parameters=[RESERVATION_ID],
        request=None,
        responses={200: ReclaimedSerializer, **errors(401, 404)},
    )
    def post(self, request, reservation_id):
        done = reclaim(reservation_id, scope=self.scope)
        count = len(done.preempted)
        at = done.preempt_at.isoformat().replace("+00:00", "Z") if done.preempt_at else None
        if at is not None:
            detail = f"the spot work lent its GPUs has notice: they are the owner's alone from {at}"
        elif count:
            detail = f"took back {count} spot reservation(s) lent its GPUs"
        else:
            detail = "nothing to do"
        return Response(
            {
                "reservation": render_reservation(done.reservation, self.scope),
                "reclaimed": count,
                "preemptAt": at,
                "detail": detail,
            }
        )
