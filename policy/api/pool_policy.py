"""A pool's policy (docs/policy.md): operators change it, tenants that may use the pool read it."""

from __future__ import annotations

from urllib.parse import urlsplit

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import PermissionDenied
from rest_framework.response import Response

from capacity.port import may_set_policy
from config.api.base import BerthAPIView
from config.api.schema import errors

from ..pool_policy import parse_policy, policy_body, put_body, visible_policy

POOL = OpenApiParameter("pool", str, OpenApiParameter.PATH, description="Pool slug.")
DURATION = "A duration such as 30m, 2h, 3d or 2w; null: off."


class PolicySerializer(serializers.Serializer):
    """A pool's policy. Durations as the API writes them (2h); null: off."""

    idleWarnAfter = serializers.CharField(
        allow_null=True,
        help_text="After this long idle a booking reads Idle and its owner is warned. " + DURATION,
    )
    idleReleaseAfter = serializers.CharField(
        allow_null=True,
        help_text="Still idle this long after the warning, the rest of the booking is released. " + DURATION,
    )
    allowKeepWhenIdle = serializers.BooleanField(
        help_text="Whether owners may mark a booking keepWhenIdle (never released for idleness)."
    )
    lendIdle = serializers.BooleanField(
        help_text="Lend idle booked GPUs to spot work (reclaimed when the owner's processes return)."
    )
    spotNotice = serializers.CharField(
        allow_null=True,
        help_text="Notice spot work gets before it is taken back: the regular request starts then, the spot"
        " work keeps its devices until its preemptAt (docs/policy.md). " + DURATION,
    )
    spotMinRuntime = serializers.CharField(
        allow_null=True,
        help_text="How long new spot work runs before it may be taken (a reclaim of lent GPUs aside). "
        + DURATION,
    )
    maxDuration = serializers.CharField(
        allow_null=True,
        help_text="The longest window a booking may ask; longer answers 422 POLICY_LIMIT. A duration"
        " such as 30m, 2h, 3d or 2w; null: no limit.",
    )
    maxLeadTime = serializers.CharField(
        allow_null=True,
        help_text="How far ahead of now a booking may start; later answers 422 POLICY_LIMIT, and"
        " earliest-start proposes no later start. A duration; null: no limit.",
    )
    maxFutureGpuHours = serializers.IntegerField(
        allow_null=True,
        min_value=1,
        help_text="The most whole-GPU-hours one tenant's bookings in the pool may hold from now on (a MIG"
        " slice counts its share); past it answers 422 POLICY_LIMIT. Null: no limit.",
    )
    approvalAboveGpuHours = serializers.IntegerField(
        allow_null=True,
        min_value=1,
        help_text="A booking of more whole-GPU-hours is placed but awaits an operator's approval"
        " (docs/policy.md, Approvals). Null: no approval needed.",
    )
    approvalHold = serializers.CharField(
        help_text="How long a booking awaits approval before it is released (default 24h). A duration."
    )
    policyWebhook = serializers.URLField(
        allow_null=True,
        help_text="The outside check: called on every create, signed (Standard Webhooks), 2 s deadline;"
        " 2xx allows, 403 refuses with its message (docs/policy.md, Outside check). Null: none.",
    )
    policyWebhookOnError = serializers.ChoiceField(
        choices=["allow", "deny"],
        help_text="What a create does when the check answers neither 2xx nor 403, or not in time.",
    )
    policyWebhookConcurrency = serializers.IntegerField(
        allow_null=True,
        min_value=1,
        max_value=1000,
        help_text="The most of the pool's creates waiting on its check at once in a web process; one more"
        " answers 429 THROTTLED at once, before anything is written. Null: no cap of the pool's own.",
    )


class PolicyInputSerializer(PolicySerializer):
    """The fields a PUT may name: only those named change."""

    policyWebhookSecret = serializers.CharField(
        help_text="Set the check's signing secret (whsec_ and base64 of 24 to 64 bytes). Without one,"
        " Berth makes one when policyWebhook is first set. Write-only: shown only in the PUT that set it."
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for field in self.fields.values():
            field.required = False


class PolicyAnswerSerializer(PolicySerializer):
    """A PUT's answer: the policy, and the check's secret when this PUT set or made it."""

    policyWebhookSecret = serializers.CharField(
        required=False, help_text="Only in the answer of the PUT that set or made it: keep it."
    )


class PolicyView(BerthAPIView):
    """A pool's policy: every caller that may use the pool reads it; operators change it."""

    @extend_schema(
        operation_id="pools_policy_get",
        tags=["pools"],
        summary="Get a pool's policy",
        description=(
            "A pool that never had its policy written reads the defaults: the site's idle settings,"
            " keeping allowed, nothing lent, no notice, no booking limits. Tenants read the outside check's address"
            " without its path and query. A pool the caller may not use answers 404."
        ),
        parameters=[POOL],
        responses={200: PolicySerializer, **errors(401, 404)},
    )
    def get(self, request, pool):
        _, policy = visible_policy(self.scope, pool)
        body = policy_body(policy)
        if body.get("policyWebhook") and not may_set_policy(request.user):
            # Tenants see where the check is, not its path or query (they may carry a token).
            parts = urlsplit(body["policyWebhook"])
            body["policyWebhook"] = f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}/…"
        return Response(body)

    @extend_schema(
        operation_id="pools_policy_set",
        tags=["pools"],
        summary="Change a pool's policy",
        description=(
            "Operators only. Changes only the fields it names; the first write starts from the"
            " defaults. An unknown field, a malformed, zero or negative duration answers 400 naming"
            " the field, and nothing is written."
        ),
        parameters=[POOL],
        request=PolicyInputSerializer,
        responses={200: PolicyAnswerSerializer, **errors(400, 401, 403, 404)},
    )
    def put(self, request, pool):
        if not may_set_policy(request.user):
            # A tenant that may not use the pool learns nothing of it: 404 before 403.
            visible_policy(self.scope, pool)
            raise PermissionDenied("only operators may change a pool's policy")
        changes = parse_policy(request.data)
        return Response(put_body(pool, changes))
