"""Drain: cordon a node, move every booking on it that has not started, and say what still runs there.

Running bookings stay until they end (the node reads "draining until <last end>", then "drained");
bookings that start later are repaired onto other nodes through BookingRepair's path, and one that
finds no room stays and reads RepairPending until room frees (the worker tries every round).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.db import connection
from django.db.models import Max
from django.utils import timezone

from capacity.models import Allocation, Reservation
from capacity.placement import NOT_FOUND, CapacityError
from inventory import services as inventory
from inventory.errors import InventoryError
from inventory.models import Node

from .repair import REPAIR_PENDING, broken, repair_reservation, wake_worker

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


def drain_state(node: Node, now: datetime | None = None) -> tuple[str, datetime | None] | None:
    """Return ("draining", last end) or ("drained", None) for a node being drained, else None."""
    if node.drain_started_at is None:
        return None
    now = now or timezone.now()
    last = Allocation.objects.filter(node=node, released_at__isnull=True, ends_at__gt=now).aggregate(
        last=Max("ends_at")
    )["last"]
    return ("draining", last) if last is not None else ("drained", None)


def affected(node_name: str, now: datetime | None = None) -> tuple[int, int]:
    """Return how many reservations run on a node now and how many are booked on it later."""
    node = Node.objects.filter(name=node_name).only("pk").first()
    if node is None:
        raise CapacityError(NOT_FOUND, f"no node {node_name}")
    found = booked_on(node.pk, now or timezone.now())
    return found.running, found.later


@dataclass(frozen=True)
class Booked:
    """Reservations (port instances too) on a node: running now, booked later, and the first start."""

    running: int
    later: int
    first_later: datetime | None


# One statement for the node page's counts: a reservation (or instance) counts once however many
# allocations it has on the node.
_BOOKED_ON_SQL = """
SELECT count(DISTINCT (reservation_id, instance_id)) FILTER (WHERE starts_at <= %(now)s),
       count(DISTINCT (reservation_id, instance_id)) FILTER (WHERE starts_at > %(now)s),
       min(starts_at) FILTER (WHERE starts_at > %(now)s)
  FROM capacity_allocation
 WHERE node_id = %(node)s AND released_at IS NULL AND ends_at > %(now)s
"""


def booked_on(node_pk: int, now: datetime) -> Booked:
    """Return what is booked on a node as of `now`, in one statement."""
    with connection.cursor() as cur:
        cur.execute(_BOOKED_ON_SQL, {"node": node_pk, "now": now})
        running, later, first = cur.fetchone()
    return Booked(running, later, first)


@dataclass
class Moves:
    """What an operator action moved off a node: reservations moved, and those that found no room."""

    node: str
    moved: list[int] = field(default_factory=list)
    waiting: list[int] = field(default_factory=list)
    left: int = 0  # still on the node for the worker to move (past the request's bound)


def live_on(node_name: str, now: datetime | None = None) -> set[int]:
    """Return the reservations with a live allocation (running or later) on a node."""
    now = now or timezone.now()
    return set(
        Allocation.objects.filter(node__name=node_name, released_at__isnull=True, ends_at__gt=now)
        .exclude(reservation=None)
        .values_list("reservation_id", flat=True)
    )


def moves_since(node_name: str, before: set[int], now: datetime | None = None) -> Moves:
    """Return what left the node among `before` (live_on before an action) and what stays for want of room.

    BookingRepair moves work off an unusable node as the action commits (maintenance, a NoExecute
    taint, a device marked unhealthy); a reservation it could not move keeps a RepairPending condition.
    """
    still = live_on(node_name, now) & before
    waiting = sorted(
        Reservation.objects.filter(pk__in=still, conditions__contains=[{"type": REPAIR_PENDING}]).values_list(
            "pk", flat=True
        )
    )
    left = 0
    if still - set(waiting):
        node = Node.objects.get(name=node_name)
        live = Allocation.objects.filter(
            node=node, released_at__isnull=True, ends_at__gt=now or timezone.now()
        )
        on_node = set(live.values_list("pk", flat=True))
        unusable = {pk for pk, found in broken([node.pool_id], now or timezone.now()).items()
                    if any(a in on_node for a, _ in found)}  # fmt: skip
        left = len((still - set(waiting)) & unusable)
    return Moves(node_name, moved=sorted(before - still), waiting=waiting, left=left)
