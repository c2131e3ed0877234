"""Reading reservations: one the caller may see, the caller's list, their allocations, whether one awaits
approval; what is booked on a node and a drained node's state (the node page's readings)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.db import connection
from django.db.models import Max, OuterRef, Subquery
from django.utils import timezone

from capacity.access import EVERYONE, Scope
from capacity.models import Allocation, AnyReservation, Reservation
from capacity.models.reservations import AWAITING
from capacity.placement import NOT_FOUND, CapacityError
from inventory.models import Node, Pool, Tenant


def get(reservation_id: int | str, *, scope: Scope = EVERYONE) -> Reservation | AnyReservation:
    """Return a reservation the caller may see, or raise NOT_FOUND.

    A reservation moved to history comes back as an AnyReservation (released or preempted: there is
    nothing left to do with it but read it).
    """
    try:
        pk = int(reservation_id)
        reservation = Reservation.objects.select_related("tenant", "pool").filter(
            pk=pk
        ).first() or AnyReservation.objects.select_related("tenant", "pool").get(pk=pk)
    except (ValueError, TypeError, OverflowError, AnyReservation.DoesNotExist):
        raise CapacityError(NOT_FOUND, f"no reservation {reservation_id}") from None
    if not scope.allows(reservation.tenant.slug):
        raise CapacityError(NOT_FOUND, f"no reservation {reservation_id}")
    return reservation


def awaiting(reservation: Reservation) -> dict | None:
    """Return a placed reservation's AwaitingApproval condition (docs/policy.md, Approvals), or None."""
    if reservation.status != Reservation.Status.PLACED:
        return None
    return reservation.condition(AWAITING)


def list_reservations(
    *, scope: Scope = EVERYONE, status: str | None = None, pool: str | None = None, tenant=None
):
    """Return the caller's reservations, live and moved to history, newest first, optionally filtered."""
    # The view keeps no series column (history drops it): a live occurrence's comes by its pk.
    series = Reservation.objects.filter(pk=OuterRef("pk")).values("series_id")[:1]
    qs = AnyReservation.objects.select_related("tenant", "pool").annotate(series_id=Subquery(series))
    # Ids, not joins on slugs: through the view only a constant id reads each side's index in order.
    if not scope.sees_every_tenant:
        known = sorted(scope.ids) if scope.ids is not None else None  # a signed-in caller's, read with them
        qs = qs.filter(tenant_id__in=known if known is not None else _ids(Tenant, scope.tenants))
    if status:
        qs = qs.filter(status=status)
    if pool:
        qs = qs.filter(pool_id__in=_ids(Pool, [pool]))
    if tenant:
        qs = qs.filter(tenant_id__in=_ids(Tenant, [tenant]))
    return qs


def _ids(model, slugs) -> list[int]:
    return list(model.objects.filter(slug__in=list(slugs)).values_list("pk", flat=True))


def allocations_of(reservation: Reservation) -> list[dict]:
    """Return a reservation's allocations with their node and the atoms it asked for."""
    return allocations_for([reservation])[reservation.pk]


# A reservation's allocations, live or in history, with their node and the atoms the request asked
# for: a slice booked only because its parent GPU is booked by the same allocation is left out.
_ALLOCATIONS_SQL = """
SELECT a.id, a.reservation_id, n.name, a.resources::text, a.starts_at, a.ends_at, a.released_at,
       ARRAY(SELECT d.uuid FROM capacity_devicebooking_all b JOIN inventory_device d ON d.id = b.device_id
              WHERE b.allocation_id = a.id
                AND NOT EXISTS (SELECT 1 FROM capacity_devicebooking_all pb
                                  JOIN inventory_device pd ON pd.id = pb.device_id
                                 WHERE pb.allocation_id = a.id AND pd.id = d.parent_id)
              ORDER BY d.index, d.uuid)
  FROM capacity_allocation_all a JOIN inventory_node n ON n.id = a.node_id
 WHERE a.reservation_id = ANY(%(reservations)s::bigint[])
 ORDER BY a.id
"""


def allocations_for(reservations: Iterable[Reservation]) -> dict[int, list[dict]]:
    """Return the allocations of many reservations, by reservation pk, in one statement.

    Each has its node, the atoms the request asked for (slices booked only because their parent
    GPU was booked whole are left out), scalar claims, window and release time.
    """
    pks = [r.pk for r in reservations]
    result: dict[int, list[dict]] = {pk: [] for pk in pks}
    if not pks:
        return result
    with connection.cursor() as cur:
        cur.execute(_ALLOCATIONS_SQL, {"reservations": pks})
        rows = cur.fetchall()
    for pk, reservation_pk, node, resources, start, end, released_at, atoms in rows:
        result[reservation_pk].append(
            {
                "id": pk,
                "nodeId": node,
                "atoms": atoms,
                "resources": json.loads(resources),
                "start": start,
                "end": end,
                "releasedAt": released_at,
            }
        )
    return result


# The lent work of these lenders still running, and when it leaves if it has notice already.
_LENT_WORK_SQL = """
SELECT id, (SELECT c->>'at' FROM jsonb_array_elements(conditions) c WHERE c->>'type' = 'PreemptAt' LIMIT 1)
  FROM capacity_reservation
 WHERE status = 'placed' AND priority = 'spot' AND lent_from <> '{}' AND lent_from && %(lenders)s::bigint[]
 ORDER BY id
"""


def lent_notices(lenders: list[int]) -> dict[int, datetime | None]:
    """Return the running spot work lent these lenders' GPUs (policy.lending), with when it leaves if
    given notice (policy.reclaim): the owner's page says whether it may reclaim."""
    with connection.cursor() as cur:
        cur.execute(_LENT_WORK_SQL, {"lenders": lenders})
        return {pk: datetime.fromisoformat(at) if at else None for pk, at in cur.fetchall()}


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
