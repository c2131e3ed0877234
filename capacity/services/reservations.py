"""Reading reservations: one the caller may see, the caller's list, their allocations, whether one awaits approval."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from django.db import connection
from django.db.models import OuterRef, Subquery

from capacity.access import EVERYONE, Scope
from capacity.models import AnyAllocation, AnyDeviceBooking, AnyReservation, Reservation
from capacity.models.reservations import AWAITING
from capacity.placement import NOT_FOUND, CapacityError
from inventory.models import Pool, Tenant


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


def allocations_for(reservations: Iterable[Reservation]) -> dict[int, list[dict]]:
    """Return the allocations of many reservations, by reservation pk, in two queries.

    Each has its node, the atoms the request asked for (slices booked only because their parent
    GPU was booked whole are left out), scalar claims, window and release time.
    """
    pks = [r.pk for r in reservations]
    allocations = list(
        AnyAllocation.objects.filter(reservation__in=pks).select_related("node").order_by("pk")
    )
    booked: dict[int, list[tuple[str, str | None]]] = {}
    rows = AnyDeviceBooking.objects.filter(allocation__in=allocations).values_list(
        "allocation_id", "device__uuid", "device__parent__uuid"
    )
    for allocation_id, uuid, parent in rows.order_by("device__index", "device__uuid"):
        booked.setdefault(allocation_id, []).append((uuid, parent))
    result: dict[int, list[dict]] = {pk: [] for pk in pks}
    for a in allocations:
        uuids = {uuid for uuid, _ in booked.get(a.pk, [])}
        result[a.reservation_id].append(
            {
                "id": a.pk,
                "nodeId": a.node.name,
                "atoms": [uuid for uuid, parent in booked.get(a.pk, []) if parent not in uuids],
                "resources": a.resources,
                "start": a.starts_at,
                "end": a.ends_at,
                "releasedAt": a.released_at,
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
