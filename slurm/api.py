"""The bridge in the REST API: a pool's Slurm bridge and its tenants' accounts (operators only)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.exceptions import PermissionDenied
from rest_framework.response import Response

from capacity.port import may_set_policy
from config.api.base import BerthAPIView
from config.api.schema import errors

from . import services

POOL = OpenApiParameter("pool", str, OpenApiParameter.PATH, description="Pool slug.")
TENANT = OpenApiParameter("tenant", str, OpenApiParameter.PATH, description="Tenant slug.")

BridgeInput = inline_serializer(
    "SlurmBridgeInput",
    {
        "enabled": serializers.BooleanField(required=False, help_text="Mirror the pool's bookings now."),
        "accountsRequired": serializers.BooleanField(
            required=False,
            help_text="A tenant books only with an account mapping (else its slug is its account).",
        ),
    },
)
AccountInput = inline_serializer("SlurmAccountInput", {"account": serializers.CharField(max_length=64)})


class ProblemSerializer(serializers.Serializer):
    """One thing the last pass could not do."""

    message = serializers.CharField(help_text="What failed, at most 300 characters.")
    at = serializers.DateTimeField(help_text="The pass that found it.")


class BridgeSerializer(serializers.Serializer):
    """A pool's Slurm bridge and how its last pass went."""

    pool = serializers.CharField()
    bridged = serializers.BooleanField()
    enabled = serializers.BooleanField()
    accountsRequired = serializers.BooleanField()
    wholeNodesOnly = serializers.BooleanField()
    accounts = serializers.DictField(child=serializers.CharField(), help_text="Tenant slug → Slurm account.")
    lastPassAt = serializers.DateTimeField(allow_null=True, required=False)
    lastOkAt = serializers.DateTimeField(
        allow_null=True, required=False, help_text="The last pass that reached Slurm."
    )
    behind = serializers.BooleanField(required=False, help_text="Slurm has not been reached lately.")
    problems = ProblemSerializer(many=True, required=False)


class OperatorView(BerthAPIView):
    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        if not may_set_policy(request.user):
            raise PermissionDenied("only operators may read or set a pool's Slurm bridge")


class BridgeView(OperatorView):
    """A pool's bridge to Slurm."""

    @extend_schema(
        operation_id="pools_slurm_get",
        tags=["pools"],
        summary="Read a pool's Slurm bridge",
        parameters=[POOL],
        responses={200: BridgeSerializer, **errors(401, 403, 404)},
    )
    def get(self, request, pool):
        return Response(services.bridge_body(pool))

    @extend_schema(
        operation_id="pools_slurm_set",
        tags=["pools"],
        summary="Bridge a pool to Slurm, or change its bridge",
        description="Operators only. The worker's next pass mirrors the pool's whole-node bookings (docs/slurm.md).",
        parameters=[POOL],
        request=BridgeInput,
        responses={200: BridgeSerializer, **errors(400, 401, 403, 404)},
    )
    def put(self, request, pool):
        return Response(services.set_bridge(pool, request.data))

    @extend_schema(
        operation_id="pools_slurm_delete",
        tags=["pools"],
        summary="Stop bridging a pool",
        description=(
            "Operators only. The bridge is switched off (`enabled: false`, its accounts kept): the next pass"
            " ends the pool's berth-* reservations and takes its nodes' Slurm conditions and windows away."
        ),
        parameters=[POOL],
        responses={204: None, **errors(401, 403, 404)},
    )
    def delete(self, request, pool):
        services.unbridge(pool)
        return Response(status=204)


class AccountView(OperatorView):
    """A tenant's Slurm account in a bridged pool."""

    @extend_schema(
        operation_id="pools_slurm_account_set",
        tags=["pools"],
        summary="Set a tenant's Slurm account in a bridged pool",
        parameters=[POOL, TENANT],
        request=AccountInput,
        responses={200: BridgeSerializer, **errors(400, 401, 403, 404)},
    )
    def put(self, request, pool, tenant):
        services.set_account(pool, tenant, services.parse_account(request.data))
        return Response(services.bridge_body(pool))

    @extend_schema(
        operation_id="pools_slurm_account_delete",
        tags=["pools"],
        summary="Remove a tenant's Slurm account mapping",
        parameters=[POOL, TENANT],
        responses={204: None, **errors(401, 403, 404)},
    )
    def delete(self, request, pool, tenant):
        services.delete_account(pool, tenant)
        return Response(status=204)
