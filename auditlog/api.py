"""GET /api/v1/audit: every change the audit's sources hold, newest first, cursor-paged; JSON or CSV."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.renderers import BaseRenderer, JSONRenderer

from auditlog.sources import Filters, audit_source, key
from config.api.auth import IsOperator
from config.api.base import BerthAPIView
from config.api.pages import plain
from config.api.schema import errors

COLUMNS = ("at", "actor", "action", "object", "before", "after", "reason", "requestId")


class CsvRenderer(BaseRenderer):
    """A page of the audit as CSV: one header line, one line per entry; before and after as JSON."""

    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        out = io.StringIO()
        writer = csv.writer(out)
        if isinstance(data, dict) and "results" in data:
            writer.writerow(COLUMNS)
            for entry in data["results"]:
                writer.writerow(
                    [
                        json.dumps(entry[c])
                        if c in ("before", "after") and entry[c] is not None
                        else entry[c]
                        for c in COLUMNS
                    ]
                )
        else:  # an error: {"code", "message"}
            writer.writerow(["code", "message"])
            writer.writerow([data.get("code", ""), data.get("message", "")])
        return out.getvalue().encode()


def _moment(name: str, raw: str | None) -> dt.datetime | None:
    if raw is None:
        return None
    try:
        value = dt.datetime.fromisoformat(raw)
    except ValueError:
        raise ValidationError({name: "an ISO 8601 time, e.g. 2026-05-01T00:00:00Z"}) from None
    if value.tzinfo is None:
        raise ValidationError({name: "give the time zone, e.g. 2026-05-01T00:00:00Z"})
    # In UTC: Postgres refuses offsets with seconds, and an offset may carry a time past year 1 or 9999.
    try:
        value = value.astimezone(dt.UTC)
    except OverflowError:
        value = None
    if value is None or not 1970 <= value.year <= 9998:
        raise ValidationError({name: "a time between 1970 and 9998, e.g. 2026-05-01T00:00:00Z"})
    return value


def _entry(entry: dict) -> dict:
    return {name: plain(entry[name]) for name in COLUMNS}


ENTRY = inline_serializer(
    "AuditEntry",
    {
        "at": serializers.DateTimeField(),
        "actor": serializers.CharField(allow_null=True),
        "action": serializers.CharField(),
        "object": serializers.CharField(),
        "before": serializers.JSONField(allow_null=True),
        "after": serializers.JSONField(allow_null=True),
        "reason": serializers.CharField(),
        "requestId": serializers.CharField(allow_null=True),
    },
    many=True,
)


class AuditView(BerthAPIView):
    """The audit export: operators only."""

    permission_classes = [IsAuthenticated, IsOperator]
    renderer_classes = [JSONRenderer, CsvRenderer]

    @extend_schema(
        operation_id="audit_list",
        tags=["audit"],
        summary="Export the audit log",
        description=(
            "Who changed what, when and in which request (X-Request-Id), newest first: sign-ins and "
            "failed sign-ins (with the provider's sub), reservation status changes, node, taint and "
            "label changes and what node reports changed, teams, memberships, users, quotas, shares, "
            "pool policies, webhooks, calendar feeds and API tokens. `?format=csv` for CSV. Operators only."
        ),
        parameters=[
            OpenApiParameter("actor", OpenApiTypes.STR, description="a username, command:NAME or system"),
            OpenApiParameter(
                "action", OpenApiTypes.STR, description="e.g. sign-in, reservation.released, node.cordon"
            ),
            OpenApiParameter(
                "object", OpenApiTypes.STR, description="e.g. user:alice, reservation:12, node:gpu-01"
            ),
            OpenApiParameter("from", OpenApiTypes.DATETIME, description="at or after"),
            OpenApiParameter("to", OpenApiTypes.DATETIME, description="before"),
            OpenApiParameter("format", OpenApiTypes.STR, enum=["json", "csv"]),
        ],
        responses={200: ENTRY, **errors(400, 401, 403)},
    )
    def get(self, request):
        query = request.query_params
        filters = Filters(
            actor=query.get("actor"),
            action=query.get("action"),
            object=query.get("object"),
            since=_moment("from", query.get("from")),
            until=_moment("to", query.get("to")),
        )
        response = self.paginated(audit_source(filters), key, lambda page: [_entry(e) for e in page])
        if response.data.get("next"):
            response["Link"] = f'<{response.data["next"]}>; rel="next"'
        return response
