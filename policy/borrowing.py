"""Shares and borrowing, a pool rule: a placement in a pool with shares is judged after its commit, under the pool's lock.

The commit's lock statement says whether the pool has shares (read under the pool row's lock, so
a share set meanwhile waits for this transaction). When it has, the pool's bookings over the
window (the new one in them), its share rows and its bookable GPUs are read in one statement and
judged (policy.share_verdict): a booking that would break a borrowing limit, or borrow a
guarantee its tenant keeps, rolls back to the attempt's savepoint and stays pending with the
reason; one that borrows records how much (`borrowed_gpus`, what a guaranteed booking may
reclaim) and a Borrowed condition. A pool without shares costs nothing here.

Placement calls it through capacity.rules (registered by policy/apps.py): COMMITTED (the judgement
above), RECLAIMS (whether a regular request may take borrowed GPUs back: may_reclaim) and SPLIT (a
batch's plans that would take a tenant past its guarantee: past_guarantees). Capacity's commit and
batch lock statements say whether the pool has shares; the rule runs only then (RECLAIMS: for every
regular request that may take spot work back, one statement, as before).
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from capacity.port import (
    BORROWED,
    Borrowed,
    Pending,
    PlacementRequest,
    PoolRow,
    Rule,
    Window,
    gpus_sql,
    prepared_cursor,
    window_literal,
)
from inventory.gpu_share import gpu_share, gpu_share_sql

from .share_verdict import Share, gpus_phrase, gpus_text, judge, within

BORROWED_REASON = "BorrowedFromShares"

# What placed reservations hold over the window, per (tenant, whether it is the reservation
# asked about, span), in whole GPUs as capacity.gpu_hours counts them (a booked slice of a booked
# GPU is part of the GPU, not more of it).
_SELECT_HOLDS = f"""
SELECT r.tenant_id, r.id = %(reservation)s::bigint AS own,
       extract(epoch FROM lower(b.during))::float8, extract(epoch FROM upper(b.during))::float8,
       sum({gpus_sql("b")})::float8
"""
_HOLDS_WHERE = """
   AND r.status = 'placed' AND b.during && %(during)s::tstzrange AND b.gpu_sevenths <> 0
 GROUP BY 1, 2, 3, 4
"""
# Every tenant's: read from the window's bookings.
_POOL_HOLDS = (
    _SELECT_HOLDS
    + """
  FROM capacity_devicebooking b
  JOIN capacity_allocation a ON a.id = b.allocation_id
  JOIN capacity_reservation r ON r.id = a.reservation_id
 WHERE r.pool_id = %(pool)s::bigint"""
    + _HOLDS_WHERE
)
# Only some tenants': read from their placed reservations in the pool (reservation_tenant_status_idx),
# so a tenant within its guarantee costs what it holds, not what the pool holds.
_TENANT_HOLDS = (
    _SELECT_HOLDS
    + """
  FROM capacity_reservation r
  JOIN capacity_allocation a ON a.reservation_id = r.id
  JOIN capacity_devicebooking b ON b.allocation_id = a.id
 WHERE r.tenant_id = ANY(ARRAY(SELECT id FROM inventory_tenant WHERE slug = ANY(%(tenants)s::text[])))
   AND r.pool_id = %(pool)s::bigint AND r.starts_at < upper(%(during)s::tstzrange)
   AND r.ends_at > lower(%(during)s::tstzrange)"""
    + _HOLDS_WHERE
)
# The holds, then the share rows, then the pool's bookable GPUs (as policy.shares counts them
# when it checks guarantees) with the asking tenant: one round trip.
_READ_SQL = f"""
SELECT 'share', s.tenant_id, false, s.guaranteed_gpus::float8, s.borrowing_limit_gpus::float8,
       s.lending_limit_gpus::float8
  FROM capacity_poolshare s WHERE s.pool_id = %(pool)s::bigint
UNION ALL
SELECT 'pool', (SELECT id FROM inventory_tenant WHERE slug = %(tenant)s::text), false,
       coalesce(sum((c.total - c.excluded) * {gpu_share_sql("c.device_class")}), 0)::float8, NULL, NULL
  FROM capacity_poolcapacityrollup c
 WHERE c.pool_id = %(pool)s::bigint AND (c.device_class = 'gpu' OR c.device_class LIKE 'mig-%%')
UNION ALL
SELECT 'hold', h.* FROM ({{holds}}) h
"""
_READ_POOL_SQL = _READ_SQL.format(holds=_POOL_HOLDS)
_READ_TENANTS_SQL = _READ_SQL.format(holds=_TENANT_HOLDS)
_RECORD_SQL = """
UPDATE capacity_reservation SET borrowed_gpus = %(gpus)s, conditions = %(conditions)s::jsonb
 WHERE id = %(reservation)s::bigint
"""


@dataclass(frozen=True)
class PoolShares:
    """A pool's share rows, its bookable GPUs and the bookings over a window, as read together."""

    tenant: int
    holds: list[tuple[Hashable, float, float, float]]
    own: float  # the whole GPUs of the reservation asked about (0 when it has no booking yet)
    shares: dict[Hashable, Share]
    capacity: float


def read_shares(
    pool_pk: int,
    reservation_pk: int | None,
    request: PlacementRequest,
    *,
    whole: bool = True,
    tenants: Sequence[str] = (),
    during: Window | None = None,
) -> PoolShares:
    """Read what judging the request's tenant over its window needs (`reservation_pk`'s booking apart).

    `whole`: every tenant's holds; else only the request's tenant's and `tenants`', over `during`
    when given (a batch's reach) rather than the request's window.
    """
    holds: list[tuple[Hashable, float, float, float]] = []
    shares: dict[Hashable, Share] = {}
    own, tenant, capacity = 0.0, 0, 0.0
    with prepared_cursor() as cur:
        cur.execute(
            _READ_POOL_SQL if whole else _READ_TENANTS_SQL,
            {
                "pool": pool_pk,
                "reservation": reservation_pk,
                "tenant": request.tenant_id,
                "tenants": [request.tenant_id, *tenants],
                "during": window_literal(during or request.during),
            },
        )
        for kind, who, mine, a, b, c in cur.fetchall():
            if kind == "hold":
                holds.append((who, a, b, c))
                own += c if mine else 0.0
            elif kind == "share":
                shares[who] = Share(a, b, c)
            else:
                tenant, capacity = who, a
    return PoolShares(tenant, holds, own, shares, capacity)


def check_shares(
    pool_pk: int, pool_slug: str, reservation_pk: int, request: PlacementRequest
) -> Borrowed | None:
    """Judge a committed booking against the pool's shares; record what it borrowed.

    Raise Pending (nothing recorded: the caller rolls back to its savepoint) when it breaks
    them; return what it borrowed, or None when it stays within its tenant's guarantee.
    """
    window = (request.during.start / 1000, request.during.end / 1000)
    # Within its guarantee (most bookings are), the tenant's own holds say all: nothing borrowed.
    own = read_shares(pool_pk, reservation_pk, request, whole=False)
    if not own.shares or within(own.tenant, 0.0, window, own.holds, own.shares):
        return None
    read = read_shares(pool_pk, reservation_pk, request)
    verdict = judge(read.tenant, read.own, window, read.holds, read.shares, read.capacity)
    if verdict.refused is not None:
        raise Pending(f"{pool_slug}: {verdict.refused}")
    if verdict.borrowed <= 0:
        return None
    guaranteed = read.shares.get(read.tenant, Share(0)).guaranteed
    condition = borrowed_condition(pool_slug, verdict.borrowed, verdict.lenders, guaranteed)
    with prepared_cursor() as cur:
        cur.execute(
            _RECORD_SQL,
            {"gpus": verdict.borrowed, "conditions": json.dumps([condition]), "reservation": reservation_pk},
        )
    return Borrowed(verdict.borrowed, verdict.lenders, condition)


def borrowed_condition(pool_slug: str, gpus: float, lenders: int, guaranteed: float) -> dict:
    """Return the Borrowed condition: what was borrowed, and from how many tenants (never whom)."""
    if lenders == 0:
        source = "the pool's GPUs that nobody is guaranteed"
    else:
        noun = "team's" if lenders == 1 else "teams'"
        source = f"{lenders} other {noun} unused guarantee"
    return {
        "type": BORROWED,
        "status": "True",
        "reason": BORROWED_REASON,
        "message": (
            f"borrows {gpus_phrase(gpus)} past the team's guarantee of {gpus_text(guaranteed)}"
            f" in {pool_slug}, from {source}; a guaranteed booking may reclaim them"
        ),
        "borrowedGpus": round(gpus, 4),
        "lenders": lenders,
    }


def request_gpus(request: PlacementRequest) -> float:
    """Return the whole GPUs a device request books (a MIG slice its share); 0 for a lease (unknown yet)."""
    if request.lease:
        return 0.0
    each = sum(
        float(gpu_share(d.device_class)) * d.count
        for d in request.devices
        if d.device_class == "gpu" or d.device_class.startswith("mig-")
    )
    return each * (request.gang.size if request.gang is not None else 1)


def may_reclaim(pool_pk: int, request: PlacementRequest) -> bool:
    """Return whether a regular request stays within its tenant's guarantee over its window.

    Such a request may take back other tenants' borrowed GPUs (capacity.placers.preempt). False in
    a pool without shares, for instances, for leases (what they hold is known once a node is
    chosen) and for a request of no GPUs.
    """
    gpus = request_gpus(request)
    if request.instance_id is not None or gpus <= 0:
        return False
    read = read_shares(pool_pk, None, request, whole=False)
    if not read.shares:
        return False
    window = (request.during.start / 1000, request.during.end / 1000)
    return within(read.tenant, gpus, window, read.holds, read.shares)


def past_guarantees(pool_pk: int, batch: Sequence[tuple[int, int, PlacementRequest]]) -> set[int]:
    """Return the keys of a batch's (key, tenant pk, request) that would take a tenant past its guarantee.

    Taken in order, each seeing the ones before it (as the batch's plans do); the others stay
    within their tenants' guarantees, borrow nothing and need no verdict. Read under the pool's lock.
    """
    if not batch:
        return set()
    reach = Window(min(r.during.start for _, _, r in batch), max(r.during.end for _, _, r in batch))
    slugs = sorted({r.tenant_id for _, _, r in batch})
    read = read_shares(pool_pk, None, batch[0][2], whole=False, tenants=slugs, during=reach)
    holds = list(read.holds)
    past = set()
    for key, tenant, request in batch:
        window = (request.during.start / 1000, request.during.end / 1000)
        gpus = request_gpus(request)
        if request.lease or not within(tenant, gpus, window, holds, read.shares):
            past.add(key)
        else:
            holds.append((tenant, *window, gpus))
    return past


def _committed(pool: PoolRow, reservation_pk: int, request: PlacementRequest) -> Borrowed | None:
    return check_shares(pool.pk, pool.view.id, reservation_pk, request)


def _may_share(pool: PoolRow) -> bool:
    return True  # whether the pool has shares is read under its lock (the commit's, the batch's)


BORROWING = Rule(
    "shares",
    applies=_may_share,
    reclaims=lambda pool, request: may_reclaim(pool.pk, request),
    committed=_committed,
    split=lambda pool, batch: past_guarantees(pool.pk, batch),
)
RULES = (BORROWING,)
