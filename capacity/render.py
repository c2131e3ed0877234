"""A reservation and a node as callers read them: the JSON the API answers, webhooks send and the
calendar feed lists, each as the caller's scope may see it. Shared, so no app renders through
another's HTTP views.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from django.db.models import Prefetch
from django.utils import timezone
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from capacity import services
from capacity.access import EVERYONE, Scope, nodes_for, redacted_conditions
from capacity.models import Reservation
from capacity.models.reservations import AWAITING, MAINTENANCE_SCHEDULED, preempt_at
from capacity.placement import scalar_capacity
from capacity.rollups import claimed_at
from inventory.api.serializers import (
    NodeDetailSerializer,
    condition_items,
    device_items,
    link_items,
    node_summary,
)
from inventory.errors import InventoryError
from inventory.filtersets import free_gpus_now
from inventory.models import Device, NodeRefusal, NodeReport

if TYPE_CHECKING:
    from capacity.rules import Place
from inventory.node_changelog import state_entries


class ConditionSerializer(serializers.Serializer):
    """A reservation condition, such as Unschedulable with the pending reason."""

    type = serializers.CharField()
    status = serializers.CharField()
    reason = serializers.CharField()
    message = serializers.CharField()


class AllocationSerializer(serializers.Serializer):
    """What the reservation holds on one node."""

    nodeId = serializers.CharField()
    atoms = serializers.ListField(child=serializers.CharField())
    resources = serializers.DictField(child=serializers.IntegerField())
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()
    releasedAt = serializers.DateTimeField(allow_null=True)


class PreemptedSerializer(serializers.Serializer):
    """The spot work a create took back to place a regular request."""

    reservations = serializers.ListField(
        child=serializers.IntegerField(), help_text="The caller's own, ascending."
    )
    others = serializers.IntegerField(help_text="How many of other tenants (not named).")


class UsageSerializer(serializers.Serializer):
    """A reservation's GPU utilization so far, from its devices' per-minute samples."""

    gpuPercentMean = serializers.FloatField(allow_null=True)
    gpuPercentP95 = serializers.FloatField(allow_null=True)
    minutesWithoutProcess = serializers.IntegerField()
    samples = serializers.IntegerField(help_text="Device-minutes sampled.")


class QueueSerializer(serializers.Serializer):
    """Where a pending reservation stands in its pool's fair queue (docs/shares.md, The queue)."""

    position = serializers.IntegerField(help_text="1 is tried first.")
    of = serializers.IntegerField(help_text="How much pending work the pool's queue holds.")
    fairShare = serializers.FloatField(
        allow_null=True, help_text="Its tenant's fair share in the pool; null: no guarantee there."
    )


class LentFromSerializer(serializers.Serializer):
    """Whose idle GPUs spot work runs on: the reservations the caller may read, and how many others."""

    reservations = serializers.ListField(child=serializers.IntegerField())
    others = serializers.IntegerField()


class AwaitingApprovalSerializer(serializers.Serializer):
    """A booking held for an operator's approval: until when, and how large it is."""

    holdUntil = serializers.DateTimeField()
    gpuHours = serializers.FloatField(help_text="Whole-GPU-hours its devices hold (a MIG slice its share).")


class MaintenanceNoticeSerializer(serializers.Serializer):
    """The maintenance window that will take GPUs this booking holds (its MaintenanceScheduled condition)."""

    windowId = serializers.IntegerField()
    start = serializers.DateTimeField(
        help_text="When the window starts: what it holds there is moved off then."
    )
    end = serializers.DateTimeField()
    reason = serializers.CharField(help_text="The operator's reason for the window; may be empty.")
    nodes = serializers.ListField(child=serializers.CharField(), help_text="Its nodes in the window.")


# The component capacity.api.inputs declares for reservations.create and capacity.preview.
@extend_schema_field({"$ref": "#/components/schemas/ReservationInput"})
class RequestField(serializers.DictField):
    """A reservation's request: the create's input, as the caller sent it."""


class ReservationSerializer(serializers.Serializer):
    """A reservation and what it holds."""

    id = serializers.IntegerField()
    tenantId = serializers.CharField()
    poolId = serializers.CharField()
    status = serializers.ChoiceField(choices=Reservation.Status.choices)
    priority = serializers.ChoiceField(choices=Reservation.Priority.choices)
    binding = serializers.ChoiceField(choices=Reservation.Binding.choices)
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()
    createdAt = serializers.DateTimeField()
    releasedAt = serializers.DateTimeField(allow_null=True)
    borrowedGpus = serializers.FloatField(
        help_text="Whole GPUs it holds past its tenant's guarantee in a pool with shares (docs/shares.md); 0 otherwise."
    )
    keepWhenIdle = serializers.BooleanField(
        help_text="Its owner asked that it never be released for idleness (docs/policy.md); still marked Idle."
    )
    preemptAt = serializers.DateTimeField(
        allow_null=True,
        help_text="Spot work given notice (the pool's spotNotice, docs/policy.md): when it is taken back;"
        " it keeps its devices until then. Null otherwise.",
    )
    awaitingApproval = AwaitingApprovalSerializer(
        allow_null=True,
        help_text="Placed above its pool's approvalAboveGpuHours (docs/policy.md, Approvals): its GPUs are"
        " held, nothing starts until an operator approves it, and it is released at holdUntil. Null otherwise.",
    )
    maintenance = MaintenanceNoticeSerializer(
        allow_null=True,
        help_text="A maintenance window scheduled over GPUs it holds (docs/repair-and-drain.md): the soonest;"
        " they are moved off at its start. Null otherwise.",
    )
    conditions = ConditionSerializer(many=True)
    allocations = AllocationSerializer(many=True)
    request = RequestField(help_text="The input as the caller sent it.")
    usage = UsageSerializer(
        allow_null=True,
        help_text="What its GPUs did, from the nodes' per-minute samples (live while it runs); null before any.",
    )
    preempted = PreemptedSerializer(
        required=False, help_text="Only in a create's 201, when placing it took spot work back."
    )
    queue = QueueSerializer(
        required=False,
        help_text="Only while it waits in the fair queue of a pool with shares: where it stands.",
    )
    lentFrom = LentFromSerializer(
        required=False,
        help_text="Only for spot work running on idle owners' lent GPUs (docs/policy.md): whose.",
    )
    seriesId = serializers.IntegerField(
        allow_null=True,
        help_text="For an occurrence of a series (docs/series.md): the series' id. Null otherwise.",
    )


ALLOCATION_KEYS = ("nodeId", "atoms", "resources", "start", "end", "releasedAt")


def reservation_data(
    reservation: Reservation,
    allocations: Iterable[Mapping],
    scope: Scope = EVERYONE,
    usage: dict | None = None,
) -> dict:
    """Return the API dict of a reservation whose tenant and pool are loaded."""
    return {
        "id": reservation.pk,
        "tenantId": reservation.tenant.slug,
        "poolId": reservation.pool.slug,
        "status": reservation.status,
        "priority": reservation.priority,
        "binding": reservation.binding,
        "start": reservation.starts_at,
        "end": reservation.ends_at,
        "createdAt": reservation.created_at,
        "releasedAt": reservation.released_at,
        # Whole GPUs held past the tenant's guarantee in a pool with shares (history rows: 0).
        "borrowedGpus": round(getattr(reservation, "borrowed_gpus", 0.0), 4),
        "keepWhenIdle": getattr(reservation, "keep_when_idle", False),
        "preemptAt": _preempt_at(reservation),
        "awaitingApproval": _awaiting(reservation),
        "maintenance": maintenance_notice(reservation),
        "conditions": redacted_conditions(reservation.conditions, scope),
        "allocations": [{k: a[k] for k in ALLOCATION_KEYS} for a in allocations],
        "request": reservation.request.get("input", {}),
        "usage": usage,
        **(
            {"lentFrom": lent_from(lenders, scope)}
            if (lenders := getattr(reservation, "lent_from", None))
            else {}
        ),
        "seriesId": getattr(reservation, "series_id", None),
    }


def lent_from(lenders: list[int], scope: Scope) -> dict:
    """Return whose GPUs spot work was lent: the lenders the caller may read, and how many others."""
    slugs = dict(Reservation.objects.filter(pk__in=lenders).values_list("pk", "tenant__slug"))
    readable = sorted(pk for pk in lenders if pk in slugs and scope.allows(slugs[pk]))
    return {"reservations": readable, "others": len(lenders) - len(readable)}


def _awaiting(reservation) -> dict | None:
    """Return a placed reservation's hold for approval ({"holdUntil", "gpuHours"}), else None."""
    held = reservation.condition(AWAITING) if reservation.status == "placed" else None
    if held is None:
        return None
    return {"holdUntil": datetime.fromisoformat(held["holdUntil"]), "gpuHours": float(held["gpuHours"])}


def maintenance_notice(reservation) -> dict | None:
    """Return the window that will take a placed reservation's GPUs (MaintenanceScheduled), else None.

    The API's `maintenance` and the reservation page's Maintenance line (the maintenance app keeps
    the condition: maintenance/notice.py)."""
    found = reservation.condition(MAINTENANCE_SCHEDULED) if reservation.status == "placed" else None
    if found is None or found.get("status") != "True":
        return None
    return {
        "windowId": found["window"],
        "start": datetime.fromisoformat(found["at"]),
        "end": datetime.fromisoformat(found["end"]),
        "reason": found.get("windowReason", ""),
        "nodes": found.get("nodes", []),
    }


def _preempt_at(reservation) -> datetime | None:
    """Return when a reservation under notice is taken back (its PreemptAt condition), else None."""
    at = preempt_at(reservation.conditions) if reservation.status == "placed" else None
    return datetime.fromisoformat(at) if at else None


def render_reservation(
    reservation: Reservation, scope: Scope = EVERYONE, *, queue: Mapping[int, Place] | None = None
) -> dict:
    """Return a reservation as the caller reads it; with `queue` (services.queue_places), its place."""
    # Samples are of minutes past: a reservation starting over a minute from now has none to read.
    ran = [] if reservation.starts_at > timezone.now() + timedelta(minutes=1) else [reservation.pk]
    usage = services.usage_for(ran).get(reservation.pk)
    data = reservation_data(reservation, services.allocations_of(reservation), scope, usage)
    if queue:
        _with_queue([data], [reservation], queue)
    return _reader(ReservationSerializer).to_representation(data)


def render_reservations(
    reservations: list[Reservation], scope: Scope = EVERYONE, *, queue: Mapping[int, Place] | None = None
) -> list[dict]:
    """Return reservations (tenant and pool loaded) as the caller reads them, in a few queries.

    With `queue` (services.queue_places: two statements more at most), those waiting in a pool's
    fair queue say where.
    """
    allocations = services.allocations_for(reservations)
    usage = services.usage_for(r.pk for r in reservations)
    rows = [reservation_data(r, allocations[r.pk], scope, usage.get(r.pk)) for r in reservations]
    if queue:
        _with_queue(rows, reservations, queue)
    reader = _reader(ReservationSerializer)
    return [reader.to_representation(row) for row in rows]


@functools.cache
def _reader(serializer: type[serializers.Serializer]) -> serializers.Serializer:
    """Return one instance of `serializer` for every answer: its fields are copied and bound once
    (0.5 ms a reservation when made per answer); rendering a dict only reads them."""
    return serializer()


def _with_queue(rows: list[dict], reservations: list[Reservation], places: Mapping[int, Place]) -> None:
    # Only the tenant's own figure and a count: nothing names another tenant.
    for row, r in zip(rows, reservations, strict=True):
        if r.pk in places:
            row["queue"] = queue_body(places[r.pk])


def queue_body(place: Place | None) -> dict | None:
    """Return the API's `queue` of a reservation: {"position", "of", "fairShare"}."""
    if place is None:
        return None
    share = None if place.fair_share is None else round(place.fair_share, 4)
    return {"position": place.position, "of": place.of, "fairShare": share}


def with_summary_rows(nodes, scope: Scope = EVERYONE):
    """Load what a summary shows in a fixed number of queries, whatever the number of nodes."""
    if "free_now" not in nodes.query.annotations:
        nodes = free_gpus_now(nodes, scope)
    return nodes.select_related("pool__site", "owner_tenant").prefetch_related("labels", "taints")


def node_detail(node_name: str, scope: Scope = EVERYONE) -> dict:
    """Return the detail dict of a node the caller may read, or raise NOT_FOUND."""
    node = (
        with_summary_rows(nodes_for(scope).filter(name=node_name), scope)
        .prefetch_related(
            Prefetch("devices", queryset=Device.objects.order_by("index", "uuid")),
            "links",
            "conditions",
            "resources",
        )
        .first()
    )
    if node is None:
        raise InventoryError("NOT_FOUND", f"no node {node_name}")
    devices = list(node.devices.all())
    uuids = {d.pk: d.uuid for d in devices}
    counts: dict[str, int] = {}
    for d in devices:
        if d.verified:  # an unverified device is listed, counted nowhere
            counts[d.device_class] = counts.get(d.device_class, 0) + 1
    data = node_summary(node, device_counts=counts, free_gpus_now=node.free_now, viewer=scope)
    data["devices"] = device_items(devices, uuids)
    data["links"] = link_items(node.links.all(), uuids)
    data["conditions"] = condition_items(node.conditions.all())
    claimed = claimed_at([node.pk], timezone.now())
    data["resources"] = [
        {
            "resource": r.resource,
            "allocatable": r.allocatable,
            "ratio": r.ratio,
            "allocated": claimed.get((node.pk, r.resource), 0),
            "capacity": scalar_capacity(r.allocatable, r.ratio),
        }
        for r in node.resources.all()
    ]
    # The operators' own words: a tenant reads that the node is cordoned, not who did it or why.
    operator = scope.reads_operators_words
    data["stateChanges"] = state_entries(node) if operator else None
    data["lastReport"] = _seen(NodeReport.objects.filter(node=node).first()) if operator else None
    data["lastRefusal"] = _refused(NodeRefusal.objects.filter(node=node).first()) if operator else None
    return _reader(NodeDetailSerializer).to_representation(data)


def _seen(report: NodeReport | None) -> dict | None:
    return None if report is None else {"at": report.at, "by": report.by}


def _refused(refusal: NodeRefusal | None) -> dict | None:
    if refusal is None:
        return None
    return {"at": refusal.at, "code": refusal.code, "message": refusal.message, "by": refusal.by}
