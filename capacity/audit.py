"""Recompute what capacity keeps by deltas and report every drift: rollups, scalars, quota, bookings,
and what other apps recount (usage's booked hours, through capacity.checks)."""

from __future__ import annotations

from django.db import connection, transaction
from django.db.models import Q

from capacity.placers import quota
from inventory.models import Pool

from .checks import other_drift
from .models import Allocation, QuotaCharge, Reservation, ScalarClaim
from .models.reservations import QUEUED
from .rollups import compute_rollups, stored_rollups
from .services.inputs import stored_request
from .services.misshapen import misshapen


def audit() -> list[str]:
    """Return one line per drift; an empty list means everything agrees.

    Outside a transaction every check reads one snapshot (repeatable read): on a live system a
    reservation committed between two of the checks' queries would otherwise read as drift.
    """
    if connection.in_atomic_block:
        return [*_all()]
    with transaction.atomic():
        with connection.cursor() as cur:
            cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        return [*_all()]


def _all() -> list[str]:
    return [
        *rollup_drift(),
        *scalar_drift(),
        *quota_drift(),
        *load_drift(),
        *booking_drift(),
        *atom_drift(),
        *other_drift(),
    ]


def rollup_drift() -> list[str]:
    """Compare stored pool rollups with a recount from devices, nodes and bookings."""
    pool_ids = list(Pool.objects.values_list("pk", flat=True))
    computed, stored = compute_rollups(pool_ids), stored_rollups(pool_ids)
    slugs = dict(Pool.objects.values_list("pk", "slug"))
    lines = []
    for key in sorted(set(computed) | set(stored)):
        want, have = computed.get(key), stored.get(key)
        if want != have:
            lines.append(f"rollup {slugs.get(key[0], key[0])}/{key[1]}: stored {have}, recomputed {want}")
    return lines


def scalar_drift() -> list[str]:
    """Compare scalar claims with their allocations: a live one claims its resources over its window.

    A released allocation's claims end by its release. Every claim is on a resource its node has.
    """
    want: dict[tuple[int, str], tuple[int, object, object]] = {}
    released: dict[int, object] = {}
    for pk, resources, start, end, released_at in Allocation.objects.values_list(
        "pk", "resources", "starts_at", "ends_at", "released_at"
    ):
        if released_at is not None:
            released[pk] = released_at
            continue
        for resource, amount in (resources or {}).items():
            if amount:
                want[(pk, resource)] = (amount, start, end)
    rows = ScalarClaim.objects.values_list("allocation_id", "resource", "amount", "during")
    lines = _held_drift("scalar allocation", "claimed", "allocated", want, rows, released)
    with connection.cursor() as cur:
        cur.execute(
            """SELECT c.id, c.resource FROM capacity_scalarclaim c
                WHERE NOT EXISTS (SELECT 1 FROM inventory_noderesource r
                                   WHERE r.node_id = c.node_id AND r.resource = c.resource)"""
        )
        lines += [f"scalar claim {pk}: the node has no resource {r}" for pk, r in cur.fetchall()]
    return lines


def quota_drift() -> list[str]:
    """Compare quota charges with the reservations that hold quota (placed, or queued at admission).

    Each such reservation is charged its demand over its window; a pending one holds nothing; a
    released one's charges end by its release.
    """
    want: dict[tuple[int, str], tuple[int, object, object]] = {}
    holding = Reservation.objects.filter(Q(status=Reservation.Status.PLACED) | QUEUED).only(
        "pk", "request", "starts_at", "ends_at"
    )
    leases = _lease_holdings()
    for reservation in holding:
        request = stored_request(reservation)
        amounts = leases.get(reservation.pk, {}) if request.lease else quota.demand(request)
        for resource, amount in amounts.items():
            want[(reservation.pk, resource)] = (amount, reservation.starts_at, reservation.ends_at)
    released = dict(
        Reservation.objects.filter(
            status__in=[Reservation.Status.RELEASED, Reservation.Status.PREEMPTED]
        ).values_list("pk", "released_at")
    )
    rows = QuotaCharge.objects.values_list("reservation_id", "resource", "amount", "during")
    return _held_drift("quota reservation", "charged", "holds", want, rows, released)


def load_drift() -> list[str]:
    """Compare each tenant's quota loads with its charges summed by the day they end."""
    with connection.cursor() as cur:
        cur.execute(
            """SELECT coalesce(l.tenant_id, c.tenant_id), coalesce(l.resource, c.resource),
                      coalesce(l.end_day, c.end_day), coalesce(l.amount, 0), coalesce(c.amount, 0)
                 FROM capacity_quotaload l
                 FULL JOIN (SELECT tenant_id, resource, floor(date_part('epoch', upper(during)) / 86400)::int AS end_day,
                                   sum(amount) AS amount
                              FROM capacity_quotacharge GROUP BY 1, 2, 3) c
                   ON (c.tenant_id, c.resource, c.end_day) = (l.tenant_id, l.resource, l.end_day)
                WHERE coalesce(l.amount, 0) <> coalesce(c.amount, 0)
                ORDER BY 1, 2, 3"""
        )
        return [
            f"quota load {tenant}/{resource}/day {day}: stored {stored}, charges sum to {summed}"
            for tenant, resource, day, stored, summed in cur.fetchall()
        ]


def _lease_holdings() -> dict[int, dict[str, int]]:
    """Return what each live lease holds: the atoms it booked per class (a split GPU's slices, not
    the GPU) and the scalars its allocations claim."""
    held: dict[int, dict[str, int]] = {}
    with connection.cursor() as cur:
        cur.execute(
            """SELECT a.reservation_id, d.device_class, count(*) FROM capacity_devicebooking_all b
                 JOIN capacity_allocation a ON a.id = b.allocation_id
                 JOIN capacity_reservation r ON r.id = a.reservation_id
                 JOIN inventory_device d ON d.id = b.device_id
                WHERE r.binding = 'node' AND a.released_at IS NULL
                  AND NOT EXISTS (SELECT 1 FROM capacity_devicebooking_all c JOIN inventory_device s ON s.id = c.device_id
                                   WHERE c.allocation_id = b.allocation_id AND s.parent_id = d.id)
                GROUP BY 1, 2"""
        )
        for pk, device_class, count in cur.fetchall():
            held.setdefault(pk, {})[device_class] = count
    for pk, resources in Allocation.objects.filter(
        reservation__binding="node", released_at__isnull=True
    ).values_list("reservation_id", "resources"):
        for resource, amount in resources.items():
            if amount > 0:
                held.setdefault(pk, {})[resource] = held.get(pk, {}).get(resource, 0) + amount
    return held


def _held_drift(kind: str, did: str, should: str, want: dict, rows, released: dict) -> list[str]:
    """Compare rows (owner pk, resource, amount, during) with what each live owner should hold.

    A released owner's rows must end by its release; a live owner's must be exactly `want`'s
    (amount, start, end) per resource.
    """
    lines, have = [], {}
    for pk, resource, amount, during in rows:
        if pk in released:
            if during.upper > max(released[pk], during.lower):
                lines.append(f"{kind} {pk}/{resource}: {did} past its release")
            continue
        have[(pk, resource)] = (amount, during.lower, during.upper)
    for key in sorted(set(want) | set(have)):
        if want.get(key) != have.get(key):
            lines.append(f"{kind} {key[0]}/{key[1]}: {did} {have.get(key)}, {should} {want.get(key)}")
    return lines


def booking_drift() -> list[str]:
    """Find double bookings (the constraint forbids them), bookings that outlive their release, and
    lent bookings of work that records no lender.

    A device lent to spot work (policy.lending) holds its owner's booking (layer 0) and the
    lent one (layer 1) at once: that is not double booking; two of one layer are.
    """
    with connection.cursor() as cur:
        cur.execute(
            """SELECT a.device_id, a.id, b.id FROM capacity_devicebooking a JOIN capacity_devicebooking b
                 ON a.device_id = b.device_id AND a.id < b.id AND a.during && b.during AND a.layer = b.layer"""
        )
        lines = [f"device {d}: bookings {x} and {y} overlap" for d, x, y in cur.fetchall()]
        cur.execute(
            """SELECT b.id FROM capacity_devicebooking b JOIN capacity_allocation al ON al.id = b.allocation_id
                 LEFT JOIN capacity_reservation r ON r.id = al.reservation_id
                WHERE b.layer = 1 AND (r.id IS NULL OR r.priority <> 'spot' OR cardinality(r.lent_from) = 0)"""
        )
        lines += [f"booking {b}: lent, but not of spot work lent GPUs" for (b,) in cur.fetchall()]
        cur.execute(
            """SELECT b.id, al.id FROM capacity_devicebooking_all b JOIN capacity_allocation_all al ON al.id = b.allocation_id
                WHERE al.released_at IS NOT NULL AND upper(b.during) > greatest(al.released_at, lower(b.during))"""
        )
        lines += [f"booking {b}: outlives the release of allocation {a}" for b, a in cur.fetchall()]
    return lines


def atom_drift() -> list[str]:
    """Find allocations whose atoms no longer match their devices (capacity.services.misshapen)."""
    return [m.drift() for m in misshapen()]
