"""A tenant's quota use over a window (GET /tenants/{slug}/quota): the API of policy.quota_report."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from capacity.port import to_datetime
from config.api.base import BerthAPIView
from config.api.schema import errors

from ..quota_report import quota_report


class QuotaUseSerializer(serializers.Serializer):
    """One resource of a tenant over a window: its limit, the most held at once, and what is held now."""

    resource = serializers.CharField(help_text="A device class, a scalar, or '*' for the default limit.")
    limit = serializers.IntegerField(allow_null=True, help_text="None: no limit applies, so it is refused.")
    peak = serializers.IntegerField(help_text="The most held at any one instant of the window.")
    now = serializers.IntegerField(help_text="Held at the time of the request.")
    default = serializers.BooleanField(help_text="The limit is the tenant's default ('*') row.")


class QuotaReportSerializer(serializers.Serializer):
    """A tenant's quota over a window."""

    tenantId = serializers.CharField()
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()
    quota = QuotaUseSerializer(many=True)


class QuotaView(BerthAPIView):
    """A tenant's peak use against each quota limit over a window."""

    @extend_schema(
        operation_id="tenants_quota",
        tags=["quota"],
        summary="Get a tenant's quota use",
        description=(
            "Quota bounds what a tenant holds at any one instant. For each resource with a limit or"
            " a charge in the window (a week from now by default): the limit, the most held at once"
            " in the window, and what is held now. `start` and `end` take epoch milliseconds or ISO"
            " 8601 times. A tenant the caller may not act for answers 404."
        ),
        parameters=[
            OpenApiParameter("start", str, description="Window start (epoch ms or ISO 8601)."),
            OpenApiParameter("end", str, description="Window end (epoch ms or ISO 8601)."),
        ],
        responses={200: QuotaReportSerializer, **errors(400, 401, 404)},
    )
    def get(self, request, slug):
        bounds = {}
        for name in ("start", "end"):
            raw = request.query_params.get(name, "").strip()
            if raw:
                bounds[name] = int(raw) if raw.isascii() and raw.isdigit() and len(raw) <= 16 else raw
        tenant, start, end, uses = quota_report(slug, scope=self.scope, **bounds)
        body = {
            "tenantId": tenant.slug,
            "start": to_datetime(start),
            "end": to_datetime(end),
            "quota": [
                {"resource": u.resource, "limit": u.limit, "peak": u.peak, "now": u.now, "default": u.default}
                for u in uses
            ],
        }
        return Response(QuotaReportSerializer(body).data)
