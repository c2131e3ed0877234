"""JSON shapes of reservations, previews and pools, for rendering and for the OpenAPI schema.

Requests are validated by the services, which name the field at fault; capacity.api.inputs holds
their schema. Output serializers render plain dicts built by the views; a reservation's shape is
capacity.render's, which webhooks share.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample
from rest_framework import serializers

from capacity.models import Reservation
from capacity.render import ReservationSerializer as ReservationSerializer
from inventory.api.serializers import KeywordFieldsMixin

# Choice sets the OpenAPI schema names once (settings.SPECTACULAR_SETTINGS["ENUM_NAME_OVERRIDES"]).
RESERVATION_STATUSES = Reservation.Status.choices
PRIORITIES = Reservation.Priority.choices


class CandidateSerializer(serializers.Serializer):
    """A node the request would fit on, with its atoms and scores."""

    nodeId = serializers.CharField()
    atoms = serializers.ListField(child=serializers.CharField())
    score = serializers.FloatField()
    scores = serializers.DictField(child=serializers.FloatField(), help_text="Per scorer, before weights.")


class RejectionSerializer(KeywordFieldsMixin, serializers.Serializer):
    """A node turned down, with the filter and the reason."""

    nodeId = serializers.CharField()
    filter_ = serializers.CharField()
    reason = serializers.CharField()


class PreemptibleSerializer(serializers.Serializer):
    """The spot work (and borrowed GPUs) a regular request would take back to fit, and from when."""

    reservations = serializers.ListField(
        child=serializers.IntegerField(), help_text="The caller's spot reservations it would end, ascending."
    )
    others = serializers.IntegerField(help_text="How many spot reservations of other tenants it would end.")
    nodes = serializers.ListField(
        child=serializers.CharField(), help_text="The node (or gang members) it would take."
    )
    startsAt = serializers.DateTimeField(
        help_text="When they would end: now, or the request's start if later."
    )
    reclaims = serializers.IntegerField(
        required=False,
        help_text="Only in a pool with shares, when some of them are other tenants' borrowed GPUs: how many"
        " it would reclaim for the caller's guarantee (docs/shares.md, Reclaim).",
    )


class PreviewSerializer(serializers.Serializer):
    """Where a request would land now, or why nothing fits."""

    fits = serializers.BooleanField()
    candidates = CandidateSerializer(many=True, help_text="Up to 10, best first.")
    reason = serializers.CharField(required=False, help_text="Why nothing fits; only when fits is false.")
    rejected = RejectionSerializer(
        many=True,
        required=False,
        help_text="With ?explain=true: every node turned down, with filter and reason.",
    )
    preemptible = PreemptibleSerializer(
        required=False,
        help_text="Only for a regular request that does not fit but would by preempting spot work.",
    )
    hints = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        help_text="When it does not fit: alternatives that would, best first, such as "
        "'fits from 2026-12-04T10:00Z on n5' or 'fits with 8 gpu on 19 nodes'.",
    )
    unsatisfiable = serializers.CharField(
        required=False,
        help_text="When no node of the pool could take it even with nothing booked: the limit it passes.",
    )


class EarliestCandidateSerializer(serializers.Serializer):
    """A node the request would take at the earliest start, with its atoms."""

    nodeId = serializers.CharField()
    atoms = serializers.ListField(child=serializers.CharField())
    score = serializers.FloatField()


class EarliestSerializer(serializers.Serializer):
    """The earliest window that fits within the horizon, or why none does."""

    fits = serializers.BooleanField()
    start = serializers.DateTimeField(required=False)
    end = serializers.DateTimeField(required=False)
    candidates = EarliestCandidateSerializer(
        many=True, help_text="At that start, best first (a gang's members); empty when nothing fits."
    )
    reason = serializers.CharField(required=False, help_text="Only when fits is false.")
    horizon = serializers.CharField(help_text="How far after the requested start was searched.")


class PoolCapacitySerializer(KeywordFieldsMixin, serializers.Serializer):
    """Atom counts of one device class in a pool, now (a GPU split into MIG slices counts as its slices)."""

    class_ = serializers.CharField(help_text="Device class.")
    total = serializers.IntegerField()
    allocated = serializers.IntegerField(help_text="Atoms booked now.")
    bookedLater = serializers.IntegerField(help_text="Atoms free now and booked for a later window.")
    free = serializers.IntegerField(help_text="Atoms booked by nobody now, on nodes in no bucket below.")
    excluded = serializers.IntegerField()
    maintenance = serializers.IntegerField(help_text="Atoms on nodes in maintenance.")
    cordoned = serializers.IntegerField(help_text="Atoms on cordoned nodes not in maintenance.")
    provisioning = serializers.IntegerField()
    unreachable = serializers.IntegerField()
    unhealthy = serializers.IntegerField()


class PoolSerializer(serializers.Serializer):
    """A pool with its capacity per device class."""

    id = serializers.CharField(help_text="The pool slug.")
    name = serializers.CharField()
    site = serializers.CharField()
    archived = serializers.BooleanField()
    ownerTenant = serializers.CharField(allow_null=True, help_text="Set for a tenant's private pool.")
    nodeCount = serializers.IntegerField()
    capacity = PoolCapacitySerializer(many=True)


RESERVE_EXAMPLE = {
    "tenantId": "acme",
    "poolId": "h100-prod",
    "devices": [
        {"class": "gpu", "count": 8, "selector": "gpuProduct in (H100-SXM5-80GB), vramGiB >= 80"},
    ],
    "topology": "nvlink-all",
    "resources": {"vcpu": 64, "memoryGiB": 512},
    "duration": "3d",
    "idempotencyKey": "train-run-42",
}
REQUEST_EXAMPLES = [
    OpenApiExample("Eight NVLinked H100s for three days", value=RESERVE_EXAMPLE, request_only=True),
    OpenApiExample(
        "Two GPUs in a window with a selector as expressions",
        value={
            "tenantId": "acme",
            "poolId": "h100-prod",
            "devices": [
                {
                    "class": "gpu",
                    "count": 2,
                    "selector": {
                        "matchExpressions": [
                            {"key": "gpuProduct", "op": "In", "values": ["H100-SXM5-80GB"]},
                            {"key": "vramGiB", "op": "Gte", "values": [80]},
                        ]
                    },
                }
            ],
            "during": {"start": "2026-12-03T09:00:00Z", "end": "2026-12-04T09:00:00Z"},
        },
        request_only=True,
    ),
]
_ATOMS = [f"GPU-5b0c1d2e-0000-4000-8000-00000000000{i}" for i in range(8)]
RESERVATION_EXAMPLES = [
    OpenApiExample(
        "Placed",
        value={
            "id": 42,
            "tenantId": "acme",
            "poolId": "h100-prod",
            "status": "placed",
            "priority": "regular",
            "binding": "none",
            "start": "2026-12-02T12:00:00Z",
            "end": "2026-12-05T12:00:00Z",
            "createdAt": "2026-12-02T12:00:00.120000Z",
            "releasedAt": None,
            "borrowedGpus": 0.0,
            "keepWhenIdle": False,
            "preemptAt": None,
            "conditions": [],
            "allocations": [
                {
                    "nodeId": "ams1-dgx-05",
                    "atoms": _ATOMS,
                    "resources": {"vcpu": 64, "memoryGiB": 512},
                    "start": "2026-12-02T12:00:00Z",
                    "end": "2026-12-05T12:00:00Z",
                    "releasedAt": None,
                }
            ],
            "request": RESERVE_EXAMPLE,
        },
        response_only=True,
        status_codes=["201"],
    ),
    OpenApiExample(
        "Pending",
        value={
            "id": 43,
            "tenantId": "acme",
            "poolId": "h100-prod",
            "status": "pending",
            "priority": "regular",
            "binding": "none",
            "start": "2026-12-02T12:00:00Z",
            "end": "2026-12-05T12:00:00Z",
            "createdAt": "2026-12-02T12:00:00.120000Z",
            "releasedAt": None,
            "borrowedGpus": 0.0,
            "keepWhenIdle": False,
            "preemptAt": None,
            "conditions": [
                {
                    "type": "Unschedulable",
                    "status": "True",
                    "reason": "NoFit",
                    "message": "no node fits (3 nodes): 2 × fits: 1 of 4 gpu free; 1 × cordoned",
                }
            ],
            "allocations": [],
            "request": {**RESERVE_EXAMPLE, "idempotencyKey": "train-run-43"},
        },
        response_only=True,
        status_codes=["201"],
    ),
]
PREVIEW_EXAMPLES = [
    OpenApiExample(
        "Eight NVLinked GPUs for a day",
        value={
            "tenantId": "acme",
            "poolId": "h100-prod",
            "devices": [{"class": "gpu", "count": 8, "topology": "nvlink-all"}],
            "duration": "1d",
            "idempotencyKey": "preview",
        },
        request_only=True,
    ),
    OpenApiExample(
        "Fits",
        value={
            "fits": True,
            "candidates": [
                {
                    "nodeId": "ams1-dgx-05",
                    "atoms": _ATOMS,
                    "score": 2.25,
                    "scores": {"binpack": 1.0, "topology": 1.0, "fragmentation": 1.0, "spread": 0.0},
                }
            ],
        },
        response_only=True,
        status_codes=["200"],
    ),
    OpenApiExample(
        "Does not fit",
        value={
            "fits": False,
            "candidates": [],
            "reason": "no node fits (3 nodes): 2 × fits: 1 of 4 gpu free; 1 × cordoned",
        },
        response_only=True,
        status_codes=["200"],
    ),
]
