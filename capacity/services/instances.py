"""Booking for another Django app: an instance's capacity, and its release.

Read through the capacity port (capacity/port.py), which says how a module calls these.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from capacity import rules
from capacity.access import EVERYONE
from capacity.models import Allocation, DeviceBooking
from capacity.placement import CapacityError, run_admit
from capacity.placement.fields import request_body
from capacity.placers.commit import Owner
from capacity.placers.ending import end_allocations
from capacity.placers.inline import place
from capacity.placers.types import PlacerConfig

from .prepare import prepare

# Advisory lock class for one instance id: two calls for one instance book one allocation.
INSTANCE_LOCK_CLASS = 0x494E5354  # "INST"


@dataclass(frozen=True)
class InstanceBooking:
    """The answer for an instance: placed on a node with atoms, or pending with the reason."""

    status: str
    node: str | None = None
    atoms: tuple[str, ...] = ()
    reason: str = ""


def reserve_for_instance(
    *,
    instance_id: str,
    tenant: str,
    pool: str,
    devices: Sequence[Mapping[str, Any]] = (),
    resources: Mapping[str, int] | None = None,
    duration: str | None = None,
    during: Mapping[str, Any] | None = None,
    node_labels: Mapping[str, str] | None = None,
    image_id: str | None = None,
    admission: Any = None,
    now: datetime | None = None,
    config: PlacerConfig | None = None,
) -> InstanceBooking:
    """Place capacity for an instance in the caller's transaction (or a new one)."""
    data = request_body(
        tenant_id=tenant,
        pool_id=pool,
        devices=list(devices),
        resources=dict(resources) if resources else None,
        image_id=image_id or None,
        duration=duration,
        during=dict(during) if during is not None else None,
    )
    # Always there, even None: the validator then names it, rather than a reservation being made.
    data["instanceId"] = instance_id
    prepared = prepare(
        data, scope=EVERYONE, now=now, config=config, node_labels=node_labels, owner_allowed=True
    )
    request, config, now = prepared.request, prepared.config, prepared.now
    # The pool's rules before a create (the outside check), before Berth takes any lock.
    who = admission.get("identity") if isinstance(admission, Mapping) else ""
    rules.before_create(prepared, str(who or ""))
    with transaction.atomic():
        existing = _live_booking(instance_id, now)
        if existing is not None:
            return existing
        if admission is not None:
            run_admit(config.plugins, request, admission)
        outcome = place(request, pool, Owner(instance_id=instance_id), config, pool=prepared.pool, now=now)
    if outcome.status != "placed":
        return InstanceBooking("pending", reason=outcome.reason)
    member = outcome.committed[0]
    return InstanceBooking("placed", node=member.node, atoms=member.atoms)


def _live_booking(instance_id: str, now: datetime) -> InstanceBooking | None:
    """Take the instance's lock; return its live booking, if it has one."""
    with connection.cursor() as cur:
        cur.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", [INSTANCE_LOCK_CLASS, instance_id])
    allocation = (
        Allocation.objects.filter(instance_id=instance_id, released_at__isnull=True, ends_at__gt=now)
        .select_related("node")
        .order_by("pk")
        .first()
    )
    if allocation is None:
        return None
    rows = (
        DeviceBooking.objects.filter(allocation=allocation)
        .order_by("device__index", "device__uuid")
        .values_list("device__uuid", "device__parent__uuid")
    )
    booked = {uuid for uuid, _ in rows}
    # A slice booked because its GPU was booked whole is part of that GPU, as the first answer said.
    uuids = tuple(uuid for uuid, parent in rows if parent not in booked)
    return InstanceBooking("placed", node=allocation.node.name, atoms=uuids)


def release_instance(instance_id: str, *, now: datetime | None = None) -> int:
    """End every live allocation of an instance; return how many."""
    if not instance_id:
        raise CapacityError("INVALID_INPUT", "instance_id is required")
    with transaction.atomic():
        allocations = Allocation.objects.select_for_update().filter(
            instance_id=instance_id, released_at__isnull=True
        )
        count = allocations.count()
        end_allocations(allocations, now or timezone.now())
    return count
