"""POST /api/v1/capacity/earliest: the earliest start at which a request's whole window fits."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from capacity import services
from capacity.services.earliest_start import earliest
from capacity.services.hints import horizon_text
from config.api.base import BerthAPIView
from config.api.schema import errors

from .inputs import IDEMPOTENCY_HEADER_PARAMETER, ReservationInputSerializer, request_input
from .serializers import EarliestSerializer


class EarliestView(BerthAPIView):
    """Find when a request could run."""

    @extend_schema(
        operation_id="capacity_earliest",
        tags=["capacity"],
        summary="Earliest start of a request",
        description=(
            "Takes the input of reservations.create plus an optional horizon (14d by default, at most "
            "90d) and answers the earliest start, from the requested one, at which the whole window "
            "fits: GPU-level bookings, slices, topology, selectors, dedications, scalars over the "
            "window and gangs, with the node(s) and atoms it would take. Exact: the request booked at "
            "that start places, and no earlier start within the horizon fits. No quota, no admission. "
            "The body may also carry `horizon`: how far after the requested start to look, such as "
            "36h or 30d (14d by default, at most 90d)."
        ),
        # The create body's schema (plus `horizon`, above): a subclass would name its enums twice.
        parameters=[IDEMPOTENCY_HEADER_PARAMETER],
        request=ReservationInputSerializer,
        responses={200: EarliestSerializer, **errors(400, 401, 403, 404, 422)},
    )
    def post(self, request):
        data = request_input(request, extra=frozenset({"horizon"}))
        answer = earliest(data, scope=self.scope)
        body: dict = {
            "fits": answer.fits,
            "candidates": answer.candidates,
            "horizon": horizon_text(answer.horizon),
        }
        if answer.fits:
            body["start"], body["end"] = answer.start, answer.end
        else:
            body["reason"] = services.redact(answer.reason, self.scope)
        return Response(EarliestSerializer(body).data)
