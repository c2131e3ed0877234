"""Drain: cordon a node, move every booking on it that has not started, and say what still runs there.

Running bookings stay until they end (the node reads "draining until <last end>", then "drained");
bookings that start later are repaired onto other nodes through BookingRepair's path (capacity's
repair, through capacity.port), and one that finds no room stays and reads RepairPending until room
frees (the worker tries every round). The node page reads a drain's state (capacity's
services.reservations, drain_state); uncordon ends it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.utils import timezone

from capacity.port import Allocation, CapacityError, repair_reservation, wake_worker
from inventory import services as inventory
from inventory.errors import InventoryError
from inventory.models import Node

# Reservations a drain moves itself before it answers (about 14 ms each); the worker moves the rest.
REQUEST_MOVE_LIMIT = 50


@dataclass
class Running:
    """A booking that runs on the drained node until it ends."""

    reservation: int | None
    instance: str | None
    ends_at: datetime


@dataclass
class DrainResult:
    """What a drain did: bookings moved off, bookings that found no room, and what still runs."""

    node: str
    moved: list[int] = field(default_factory=list)
    waiting: list[int] = field(default_factory=list)
    running: list[Running] = field(default_factory=list)
    left: int = 0  # reservations past the request's bound, moved by the worker

    @property
    def until(self) -> datetime | None:
        """Return when the last running booking ends (None: drained)."""
        return max((r.ends_at for r in self.running), default=None)


def drain(node_name: str, *, reason: str = "", now: datetime | None = None) -> DrainResult:
    """Drain a node: cordon it, move what has not started, list what runs (operators only)."""
    now = now or timezone.now()
    # What has not started, read before the drain: once the cordon commits (outside a caller's
    # transaction) BookingRepair may already move some of it; what is left is moved here.
    later = sorted(
        set(
            Allocation.objects.filter(node__name=node_name, released_at__isnull=True, starts_at__gt=now)
            .exclude(reservation=None)
            .values_list("reservation_id", flat=True)
        )
    )
    try:
        inventory.start_drain(node_name, reason, now)
    except InventoryError as err:
        raise CapacityError(err.code, err.message) from None
    result = DrainResult(node_name)
    # A request moves a bounded number itself; the worker moves the rest (woken at once), as the
    # node's later bookings are on a draining node, which BookingRepair moves off.
    result.left = max(0, len(later) - REQUEST_MOVE_LIMIT)
    if result.left:
        wake_worker([Node.objects.get(name=node_name).pool_id])
    for reservation in later[:REQUEST_MOVE_LIMIT]:
        allocations = list(
            Allocation.objects.filter(
                reservation_id=reservation, node__name=node_name, released_at__isnull=True, starts_at__gt=now
            ).values_list("pk", flat=True)
        )
        if allocations:
            repair_reservation(
                reservation,
                [(pk, f"{node_name} is draining") for pk in allocations],
                now=now,
                avoid=node_name,
                kind="drain",
            )
        still = Allocation.objects.filter(
            reservation_id=reservation, node__name=node_name, released_at__isnull=True, ends_at__gt=now
        ).exists()
        (result.waiting if still else result.moved).append(reservation)
    result.running = running_on(node_name, now)
    return result


def running_on(node_name: str, now: datetime) -> list[Running]:
    """Return the bookings that run on a node now, soonest end first."""
    rows = Allocation.objects.filter(
        node__name=node_name, released_at__isnull=True, starts_at__lte=now, ends_at__gt=now
    ).values_list("reservation_id", "instance_id", "ends_at")
    return sorted((Running(*row) for row in rows), key=lambda r: r.ends_at)
