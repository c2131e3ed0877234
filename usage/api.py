"""GET /api/v1/usage: GPU-hours booked and used, as JSON or CSV (Accept: text/csv, or ?format=csv).

`from` and `to` are whole UTC days, `to` included (usage_report.usage_period).
"""

from __future__ import annotations

import io

from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.response import Response

from config import csvcells
from config.api.base import BerthAPIView
from config.replica import replica_reads
from usage.report import BUCKETS, GROUPS, usage_period, usage_report

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
            write_rows(out, data["rows"])
        return out.getvalue().encode()


def write_rows(out, rows: list[dict]) -> None:
    """Write usage rows as CSV to `out`: the columns they have, one header line."""
    present = [c for c in COLUMNS if any(c in r for r in rows)] or list(COLUMNS)
    writer = csvcells.DictWriter(out, fieldnames=present, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)


class UsageView(BerthAPIView):
    renderer_classes = [JSONRenderer, CSVRenderer]

    @extend_schema(
        tags=["usage"],
        summary="GPU-hours booked and used per group and day, week or month (JSON, or CSV)",
        parameters=[
            OpenApiParameter(
                "from", str, description="First day, YYYY-MM-DD, UTC (default 29 days before to)."
            ),
            OpenApiParameter(
                "to",
                str,
                description="Last day, YYYY-MM-DD, UTC, included (default today). At most 366 days with from.",
            ),
            OpenApiParameter(
                "groupBy", str, description=f"Comma-separated: {', '.join(GROUPS)} (default tenant)."
            ),
            OpenApiParameter("bucket", str, enum=list(BUCKETS), description="day (default), week or month."),
        ],
        responses=inline_serializer(
            "UsageReport",
            {
                "from": serializers.DateField(),
                "to": serializers.DateField(),
                "rows": serializers.ListField(child=serializers.DictField()),
            },
        ),
    )
    @replica_reads
    def get(self, request):
        now = timezone.now()
        first, last = usage_period(
            request.query_params.get("from"), request.query_params.get("to"), now=now, days=DEFAULT_DAYS
        )
        group_by = [g for g in request.query_params.get("groupBy", "tenant").split(",") if g]
        bucket = request.query_params.get("bucket", "day")
        rows = usage_report(first, last, group_by, bucket, self.scope, now=now)
        return Response(
            {"from": first.isoformat(), "to": last.isoformat(), "rows": [r.as_dict() for r in rows]}
        )
