"""A pool's shares per tenant (docs/shares.md): operators set and remove them, tenants read their own."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.exceptions import PermissionDenied
from rest_framework.response import Response

from capacity.port import may_set_shares
from config.api.base import BerthAPIView
from config.api.pages import list_source
from config.api.schema import errors

from ..shares import ShareRow, delete_share, parse_share, set_share, share_rows

POOL = OpenApiParameter("pool", str, OpenApiParameter.PATH, description="Pool slug.")
TENANT = OpenApiParameter("tenant", str, OpenApiParameter.PATH, description="Tenant slug.")

ShareInputSerializer = inline_serializer(
    "ShareInput",
    {
        "guaranteedGpus": serializers.IntegerField(min_value=0, help_text="Whole GPUs guaranteed."),
        "borrowingLimitGpus": serializers.IntegerField(
            min_value=0,
            allow_null=True,
            required=False,
            help_text="How many more it may borrow; null: no limit.",
        ),
        "lendingLimitGpus": serializers.IntegerField(
            min_value=0,
            allow_null=True,
            required=False,
            help_text="How much of its guarantee others may borrow; null: all.",
        ),
    },
)


class ShareSerializer(serializers.Serializer):
    """One tenant's share of a pool, with what it holds now."""

    tenantId = serializers.CharField()
    guaranteedGpus = serializers.IntegerField()
    borrowingLimitGpus = serializers.IntegerField(allow_null=True)
    lendingLimitGpus = serializers.IntegerField(allow_null=True)
    holdingGpus = serializers.FloatField(help_text="Whole-GPU equivalents held now (a MIG slice its share).")
    borrowedGpus = serializers.FloatField(help_text="Held now beyond the guarantee.")
    fairShare = serializers.FloatField(
        allow_null=True,
        help_text="GPU-hours booked, decayed by the half-life, over the guarantee; null at 0.",
    )


def by_tenant(row: ShareRow) -> tuple:
    """Return where a share row stands in its pool's list: by tenant."""
    return (row.tenant,)


def share_body(row: ShareRow) -> dict:
    return {
        "tenantId": row.tenant,
        "guaranteedGpus": row.guaranteed_gpus,
        "borrowingLimitGpus": row.borrowing_limit_gpus,
        "lendingLimitGpus": row.lending_limit_gpus,
        "holdingGpus": row.holding_gpus,
        "borrowedGpus": row.borrowed_gpus,
        "fairShare": row.fair_share,
    }


class SharesView(BerthAPIView):
    """The shares of a pool the caller may read."""

    @extend_schema(
        operation_id="pools_shares_list",
        tags=["pools"],
        summary="List a pool's shares",
        description=(
            "Operators read every tenant's row; a tenant its own only, by tenant, cursor-paged like"
            " every list. A pool the caller may not use answers 404. A pool with no rows has no"
            " shares and places as it always did."
        ),
        parameters=[POOL],
        responses={200: ShareSerializer(many=True), **errors(400, 401, 404)},
    )
    def get(self, request, pool):
        rows = share_rows(self.scope, pool)
        return self.paginated(
            list_source(rows, by_tenant), by_tenant, lambda page: [share_body(r) for r in page]
        )


class ShareView(BerthAPIView):
    """One tenant's share of a pool: operators set and remove it."""

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        if not may_set_shares(request.user):
            raise PermissionDenied("only operators may set or remove shares")

    @extend_schema(
        operation_id="pools_shares_set",
        tags=["pools"],
        summary="Set a tenant's share of a pool",
        description=(
            "Operators only. Whole GPUs, 0 or more; null limits: no borrowing limit, all may be lent."
            " The pool's guarantees may not add up to more than its bookable GPUs (400)."
        ),
        parameters=[POOL, TENANT],
        request=ShareInputSerializer,
        responses={200: ShareSerializer, **errors(400, 401, 403, 404)},
    )
    def put(self, request, pool, tenant):
        guaranteed, borrowing, lending = parse_share(request.data)
        set_share(pool, tenant, guaranteed, borrowing, lending)
        row = next(r for r in share_rows(self.scope, pool) if r.tenant == tenant)
        return Response(share_body(row))

    @extend_schema(
        operation_id="pools_shares_delete",
        tags=["pools"],
        summary="Remove a tenant's share of a pool",
        description="Operators only. The pool places as before once it has no rows left.",
        parameters=[POOL, TENANT],
        responses={204: None, **errors(401, 403, 404)},
    )
    def delete(self, request, pool, tenant):
        delete_share(pool, tenant)
        return Response(status=204)
