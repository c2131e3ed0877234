"""Series over the API (docs/series.md): created through POST /reservations with `repeat` (capacity
hands such a create to `create_series`, capacity.series_hooks); read and released here."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework import status as http
from rest_framework.response import Response

from capacity.port import RepeatSerializer, Reservation, ReservationInputSerializer, admission_context
from config.api.base import BerthAPIView
from config.api.exceptions import error_body
from config.api.schema import errors

from .book import SeriesNotPlaced, reserve_series
from .occurrences import get_series, occurrences_of
from .release import release_series
from .render import occurrence_items, series_data

SERIES_ID = OpenApiParameter("series_id", OpenApiTypes.INT, OpenApiParameter.PATH)


class OccurrenceSerializer(serializers.Serializer):
    """One occurrence of a series: its reservation, start and status (a pending one with its reason)."""

    reservationId = serializers.IntegerField()
    start = serializers.DateTimeField()
    status = serializers.ChoiceField(choices=Reservation.Status.choices)
    reason = serializers.CharField(required=False, help_text="Why it is not placed; only when it is not.")


class SeriesSerializer(serializers.Serializer):
    """A series: its rule over the first window, and its occurrences still live, in start order."""

    id = serializers.IntegerField()
    tenantId = serializers.CharField()
    poolId = serializers.CharField()
    rule = serializers.CharField(help_text="The RFC 5545 RRULE value, in UTC.")
    repeat = RepeatSerializer()
    start = serializers.DateTimeField(help_text="The first occurrence's start.")
    end = serializers.DateTimeField(help_text="The first occurrence's end.")
    allOrNothing = serializers.BooleanField()
    createdBy = serializers.CharField(allow_blank=True)
    createdAt = serializers.DateTimeField()
    request = ReservationInputSerializer(help_text="The input as the caller sent it.")
    occurrences = OccurrenceSerializer(many=True)


class SeriesAnswerSerializer(serializers.Serializer):
    """The answer of a series' create and read."""

    series = SeriesSerializer()


class SeriesReleasedSerializer(serializers.Serializer):
    """The answer of a series' release: the series, and the reservations released now."""

    series = SeriesSerializer()
    released = serializers.ListField(child=serializers.IntegerField())


def create_series(view: BerthAPIView, request, data) -> Response:
    """Answer a create with `repeat`: 201 with the series, 200 for a replayed key, 409 for allOrNothing."""
    admission = admission_context(data.get("tenantId"), request.user.get_username(), "user")
    try:
        result = reserve_series(data, scope=view.scope, admission=admission, by=request.user.get_username())
    except SeriesNotPlaced as refused:
        body = {
            **error_body(refused.code, refused.message),
            "occurrences": occurrence_items(refused.occurrences, view.scope),
        }
        return Response(body, status=http.HTTP_409_CONFLICT)
    body = {"series": series_data(result.series, result.occurrences, view.scope)}
    return Response(body, status=http.HTTP_201_CREATED if result.created else http.HTTP_200_OK)


class SeriesView(BerthAPIView):
    """One series and its occurrences."""

    @extend_schema(
        operation_id="series_get",
        tags=["reservations"],
        summary="Get a series",
        description=(
            "The series' rule, first window and its occurrences still live, in start order, each with"
            " its reservation, start and status (a pending one with its reason). Another tenant's series"
            " answers 404, as one that does not exist."
        ),
        parameters=[SERIES_ID],
        responses={200: SeriesAnswerSerializer, **errors(401, 404)},
    )
    def get(self, request, series_id):
        series = get_series(series_id, scope=self.scope)
        return Response({"series": series_data(series, occurrences_of(series), self.scope)})


class SeriesReleaseView(BerthAPIView):
    """Release a series' occurrences that have not ended."""

    @extend_schema(
        operation_id="series_release",
        tags=["reservations"],
        summary="Release a series",
        description=(
            "Releases every occurrence not yet ended (placed or pending), as releasing each would;"
            " ones already over or released stay as they are. `released` lists the reservations it"
            " released now: releasing again releases none."
        ),
        parameters=[SERIES_ID],
        request=None,
        responses={200: SeriesReleasedSerializer, **errors(401, 404)},
    )
    def post(self, request, series_id):
        series, released = release_series(series_id, scope=self.scope)
        body = series_data(series, occurrences_of(series), self.scope)
        return Response({"series": body, "released": released})
