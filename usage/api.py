"""GET /api/v1/usage: GPU-hours booked and used, as JSON; /api/v1/usage.csv (or ?format=csv) as CSV.

`from` and `to` are whole UTC days, `to` included (usage_report.usage_period).
"""

from __future__ import annotations

import io

from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.response import Response

from config import csvcells
from config.api.base import BerthAPIView
from config.api.negotiation import CsvOnly
from config.api.schema import NO_FORMAT, json_errors
from config.replica import replica_reads
from usage.report import BUCKETS, GROUPS, KEY_NAMES, usage_period, usage_report

COLUMNS = (
    "tenantId",
    "poolId",
    "gpuModel",
    "bucket",
    "gpuHoursBooked",
    "gpuHoursUsed",
    "gpuHoursBookedAhead",
    "gpuHoursLent",
)
DEFAULT_DAYS = 30


class CSVRenderer(BaseRenderer):
    """The usage rows as CSV, one header line (an error stays JSON: config.middleware.ApiErrorsAreJson)."""

    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        out = io.StringIO()
        if isinstance(data, dict) and "rows" in data:
            write_rows(out, data["rows"], group_by(renderer_context["request"]))
        return out.getvalue().encode()


def columns(groups: list[str]) -> list[str]:
    """Name the columns of a report grouped by `groups`, whether or not it has rows."""
    keys = {KEY_NAMES[g] for g in groups}
    return [c for c in COLUMNS if c in keys or c not in KEY_NAMES.values()]


def group_by(request) -> list[str]:
    """Read `groupBy` (usage_report checks the names)."""
    return [g for g in request.query_params.get("groupBy", "tenant").split(",") if g]


def write_rows(out, rows: list[dict], groups: list[str]) -> None:
    """Write usage rows as CSV to `out`, one header line: the groups' columns, then the figures."""
    writer = csvcells.DictWriter(out, fieldnames=columns(groups), extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)


class UsageRowSerializer(serializers.Serializer):
    """One group's GPU-hours in one bucket; the group's keys are those groupBy names."""

    tenantId = serializers.CharField(required=False, help_text="With groupBy tenant.")
    poolId = serializers.CharField(required=False, help_text="With groupBy pool.")
    gpuModel = serializers.CharField(required=False, help_text="With groupBy model.")
    bucket = serializers.DateField(help_text="The bucket's first day (a week's Monday, a month's 1st).")
    gpuHoursBooked = serializers.FloatField(help_text="Booked up to now.")
    gpuHoursUsed = serializers.FloatField()
    gpuHoursBookedAhead = serializers.FloatField(help_text="Booked after now.")
    gpuHoursLent = serializers.FloatField(help_text="Of the booked hours, those lent to spot work.")


PARAMETERS = [
    OpenApiParameter("from", str, description="First day, YYYY-MM-DD, UTC (default 29 days before to)."),
    OpenApiParameter(
        "to",
        str,
        description="Last day, YYYY-MM-DD, UTC, included (default today). At most 366 days with from.",
    ),
    OpenApiParameter("groupBy", str, description=f"Comma-separated: {', '.join(GROUPS)} (default tenant)."),
    OpenApiParameter("bucket", str, enum=list(BUCKETS), description="day (default), week or month."),
]


class UsageView(BerthAPIView):
    # `?format=csv` and `Accept: text/csv` still answer CSV here; the schema declares CSV as
    # GET /api/v1/usage.csv, an operation of its own, so that a generated client reads each as it is.
    renderer_classes = [JSONRenderer, CSVRenderer]

    @extend_schema(
        operation_id="usage_report",
        tags=["usage"],
        summary="GPU-hours booked and used per group and day, week or month",
        parameters=[*PARAMETERS, NO_FORMAT],
        responses={
            (200, "application/json"): inline_serializer(
                "UsageReport",
                {
                    "from": serializers.DateField(),
                    "to": serializers.DateField(),
                    "rows": UsageRowSerializer(many=True),
                },
            ),
            **json_errors(400, 401),
        },
    )
    @replica_reads
    def get(self, request):
        return self.report(request)

    def report(self, request):
        now = timezone.now()
        first, last = usage_period(
            request.query_params.get("from"), request.query_params.get("to"), now=now, days=DEFAULT_DAYS
        )
        bucket = request.query_params.get("bucket", "day")
        rows = usage_report(first, last, group_by(request), bucket, self.scope, now=now)
        return Response(
            {"from": first.isoformat(), "to": last.isoformat(), "rows": [r.as_dict() for r in rows]}
        )


class UsageCsvView(UsageView):
    renderer_classes = [CSVRenderer]
    content_negotiation_class = CsvOnly

    @extend_schema(
        operation_id="usage_report_csv",
        tags=["usage"],
        summary="The usage report as CSV: one header line, a line per row",
        description=(
            "The columns are the groupBy's keys (in the order tenantId, poolId, gpuModel), then the figures,"
            " also when no row falls in the period; `bucket` is a day, YYYY-MM-DD."
        ),
        parameters=PARAMETERS,
        responses={
            (200, "text/csv"): OpenApiResponse(OpenApiTypes.STR, description="The rows as CSV."),
            **json_errors(400, 401),
        },
    )
    @replica_reads
    def get(self, request):
        return self.report(request)
