"""GET /api/v1/audit: every change the audit's sources hold, newest first, cursor-paged; JSON, or CSV (audit.csv)."""

from __future__ import annotations

import datetime as dt
import io
import json

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.renderers import BaseRenderer, JSONRenderer

from auditlog.sources import Filters, audit_source, key
from config import csvcells
from config.api.auth import IsOperator
from config.api.base import BerthAPIView
from config.api.negotiation import CsvOnly
from config.api.pages import plain
from config.api.schema import NO_FORMAT, json_errors

COLUMNS = ("at", "actor", "action", "object", "before", "after", "reason", "requestId")


class CsvRenderer(BaseRenderer):
    """A page of the audit as CSV: one header line, one line per entry; before and after as JSON."""

    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        out = io.StringIO()
        writer = csvcells.Writer(out)
        if isinstance(data, dict) and "results" in data:
            writer.writerow(COLUMNS)
            for entry in data["results"]:
                writer.writerow([_cell(entry, c) for c in COLUMNS])
        else:  # an error: {"code", "message"}
            writer.writerow(["code", "message"])
            writer.writerow([data.get("code", ""), data.get("message", "")])
        return out.getvalue().encode()


def _cell(entry: dict, column: str):
    """Return an entry's CSV cell: before and after as JSON, the time as every CSV writes one."""
    value = entry[column]
    if column == "at":
        return csvcells.csv_time(dt.datetime.fromisoformat(value))
    if column in ("before", "after") and value is not None:
        return json.dumps(value)
    return value


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
        "before": serializers.JSONField(help_text="What changed, before (any JSON; null for none)."),
        "after": serializers.JSONField(help_text="What changed, after (any JSON; null for none)."),
        "reason": serializers.CharField(),
        "requestId": serializers.CharField(allow_null=True),
    },
    many=True,
)


FILTERS = [
    OpenApiParameter("actor", OpenApiTypes.STR, description="a username, or a command's name"),
    OpenApiParameter(
        "action", OpenApiTypes.STR, description="e.g. sign-in, reservation.released, node.cordon"
    ),
    OpenApiParameter("object", OpenApiTypes.STR, description="e.g. user:alice, reservation:12, node:gpu-01"),
    OpenApiParameter("from", OpenApiTypes.DATETIME, description="at or after"),
    OpenApiParameter("to", OpenApiTypes.DATETIME, description="before"),
]


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
            "label changes and what node reports changed, teams, memberships, users, quotas, shares, pool policies, "
            "webhooks, calendar feeds and API tokens. Operators only; as CSV: GET /api/v1/audit.csv."
        ),
        parameters=[*FILTERS, NO_FORMAT],
        responses={(200, "application/json"): ENTRY, **json_errors(400, 401, 403)},
    )
    def get(self, request):
        return self.export(request)

    def export(self, request):
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


PAGE_PARAMETERS = [
    OpenApiParameter("cursor", OpenApiTypes.STR, description="The page: follow the Link header as it is."),
    OpenApiParameter(
        "page_size", OpenApiTypes.INT, description="Entries a page: 50 by default, at most 500."
    ),
]


class AuditCsvView(AuditView):
    """The audit export as CSV, a page at a time: the next page's address in the Link header."""

    renderer_classes = [CsvRenderer]
    content_negotiation_class = CsvOnly

    @extend_schema(
        operation_id="audit_list_csv",
        tags=["audit"],
        summary="Export the audit log as CSV",
        description=(
            "The JSON export's page as CSV: one header line, a line per entry, `before` and `after` as"
            " JSON, `at` in UTC with microseconds (2026-05-01T12:00:00.000000Z). The next page's"
            ' address is in the Link header (rel="next"). Operators only.'
        ),
        parameters=[*FILTERS, *PAGE_PARAMETERS],
        responses={
            (200, "text/csv"): OpenApiResponse(OpenApiTypes.STR, description="A page of the audit as CSV."),
            **json_errors(400, 401, 403),
        },
    )
    def get(self, request):
        return self.export(request)
