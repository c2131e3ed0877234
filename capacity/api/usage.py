"""GET /api/v1/usage: GPU-hours booked and used, as JSON or CSV (Accept: text/csv, or ?format=csv)."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime, time, timedelta

from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.response import Response

from capacity.placement import INVALID_INPUT, CapacityError
from capacity.services.usage_report import BUCKETS, GROUPS, usage_report
from config.api.base import BerthAPIView
from config.replica import replica_reads

COLUMNS = ("tenantId", "poolId", "gpuModel", "bucket", "gpuHoursBooked", "gpuHoursUsed")


class CSVRenderer(BaseRenderer):
    """The usage rows as CSV, one header line; an error as its code and message."""

    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        out = io.StringIO()
        if isinstance(data, dict) and "rows" in data:
            rows = data["rows"]
            present = [c for c in COLUMNS if any(c in r for r in rows)] or list(COLUMNS)
            writer = csv.DictWriter(out, fieldnames=present, extrasaction="ignore", lineterminator="\n")
            writer.writeheader()
            writer.writerows(rows)
        elif isinstance(data, dict):
            out.write(f"{data.get('code', '')},{data.get('message', '')}\n")
        return out.getvalue().encode()


def when(raw: str | None, name: str, default: datetime) -> datetime:
    """Read `from`/`to`: a date (midnight UTC) or an ISO 8601 time with its offset."""
    if raw is None:
        return default
    day = parse_date(raw) if len(raw) == 10 else None
    if day is not None:
        return datetime.combine(day, time(), tzinfo=UTC)
    try:
        moment = parse_datetime(raw)
    except ValueError:
        moment = None
    if moment is None or moment.tzinfo is None:
        raise CapacityError(
            INVALID_INPUT, f"{name}: a date (2026-12-01) or a time with its offset (2026-12-01T08:00Z)"
        )
    return moment


class UsageView(BerthAPIView):
    renderer_classes = [JSONRenderer, CSVRenderer]

    @extend_schema(
        tags=["usage"],
        summary="GPU-hours booked and used per group and day, week or month (JSON, or CSV)",
        parameters=[
            OpenApiParameter("from", str, description="Start: a date or ISO time (default 30 days ago)."),
            OpenApiParameter(
                "to", str, description="End, exclusive (default now). At most 366 days after from."
            ),
            OpenApiParameter(
                "groupBy", str, description=f"Comma-separated: {', '.join(GROUPS)} (default tenant)."
            ),
            OpenApiParameter("bucket", str, enum=list(BUCKETS), description="day (default), week or month."),
        ],
        responses=inline_serializer(
            "UsageReport", {"rows": serializers.ListField(child=serializers.DictField())}
        ),
    )
    @replica_reads
    def get(self, request):
        now = timezone.now()
        end = when(request.query_params.get("to"), "to", now)
        start = when(request.query_params.get("from"), "from", end - timedelta(days=30))
        group_by = [g for g in request.query_params.get("groupBy", "tenant").split(",") if g]
        bucket = request.query_params.get("bucket", "day")
        rows = usage_report(start, end, group_by, bucket, self.scope)
        return Response({"rows": [r.as_dict() for r in rows]})
