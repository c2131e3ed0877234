"""Spot preemption and reclaim: a regular request that fits only by taking spot work back does so.

In a pool with shares, a regular request that keeps its tenant within its guarantee over its
window may also take back other tenants' borrowing reservations (borrowed_gpus > 0,
policy.borrowing, a pool rule at RECLAIMS): the guarantee is reclaimed, the fewest GPU-hours first, the same way.
Below, "spot work" reads "spot work, or borrowing work being reclaimed".

When a regular request does not fit, the pool is planned again with every spot booking and claim
in the window counted free. Each node that then fits is given the cheapest set of spot
reservations whose release makes it fit (cheapest first, added until the node fits, then any
that turn out unneeded dropped); the node that preempts the fewest device-hours wins, ties by
the usual score, then by name. Spot never preempts spot, and regular work is never preempted.

The commit happens in one savepoint, in the lock order: the victims' reservation rows (before
the pool, as the lock order has reservations; the pool-lease batch, which already holds its pool,
skips victims another transaction holds instead of waiting), then the normal guarded commit
(pool → node → devices → scalars), which decides whether the room is really there. Victims end at the preemption time, the request's
start: now, or later for a request that starts later, so spot work runs until regular work
needs the room.
"""

from __future__ import annotations

import dataclasses
from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from capacity import rules
from capacity.db.cursors import prepared_cursor
from capacity.db.literals import to_datetime, window_range
from capacity.placement import PlacementRequest, Plan, Ranked
from capacity.placement.lease import Busy, plan_lease
from capacity.placement.timeline import peak

from .index import PoolIndex, pool_index, views_for
from .loader import NodeIndex, PoolRow
from .sql import key_in

# Work that may be taken back at all: not already under notice (policy.notice), and spot work that
# will have run spotMinRuntime by the preemption time (`young`: the latest start, a SPARES rule's).
TAKEABLE_SQL = """NOT r.conditions @> '[{"type": "PreemptAt"}]'
           AND (r.priority <> 'spot' OR %(young)s::timestamptz IS NULL OR NOT EXISTS (
                SELECT 1 FROM capacity_allocation y WHERE y.reservation_id = r.id AND y.starts_at > %(young)s::timestamptz))"""

# Every booking of the pool in the window (a device once per booking), and those of placed spot
# reservations with their reservation: arrays in one row, which the driver parses in C. Reading
# spot bookings from the reservations' side keeps the join to the few rows that are spot work.
_HOLDS_SQL = f"""
SELECT ARRAY(SELECT device_id FROM capacity_devicebooking
              WHERE during && %(during)s::tstzrange
                AND {key_in("device_id", "%(low)s::bigint", "%(high)s::bigint")}),
       s.devices, s.reservations
  FROM (SELECT array_agg(b.device_id) AS devices, array_agg(a.reservation_id) AS reservations
          FROM capacity_reservation r
          JOIN capacity_allocation a ON a.reservation_id = r.id
          JOIN capacity_devicebooking b ON b.allocation_id = a.id
         WHERE r.pool_id = %(pool)s::bigint AND r.status = 'placed'
           AND (r.priority = 'spot' OR (%(reclaim)s AND r.borrowed_gpus > 0 AND r.tenant_id <> (
                SELECT t.id FROM inventory_tenant t WHERE t.slug = %(tenant)s::text)))
           AND {TAKEABLE_SQL}
           AND r.starts_at < upper(%(during)s::tstzrange) AND r.ends_at > lower(%(during)s::tstzrange)
           AND b.during && %(during)s::tstzrange) AS s
"""
_CLAIMS_SQL = f"""
SELECT c.node_id, c.resource, c.amount, (date_part('epoch', lower(c.during)) * 1000)::bigint,
       (date_part('epoch', upper(c.during)) * 1000)::bigint, a.reservation_id,
       coalesce((r.priority = 'spot' OR (%(reclaim)s AND r.status = 'placed' AND r.borrowed_gpus > 0
                AND r.tenant_id <> (SELECT t.id FROM inventory_tenant t WHERE t.slug = %(tenant)s::text)))
                AND {TAKEABLE_SQL}, false)
  FROM capacity_scalarclaim c
  JOIN capacity_allocation a ON a.id = c.allocation_id
  LEFT JOIN capacity_reservation r ON r.id = a.reservation_id
 WHERE cardinality(%(names)s::text[]) > 0 AND c.during && %(during)s::tstzrange
   AND c.resource = ANY(%(names)s::text[])
   AND {key_in("c.node_id", "%(node_low)s::bigint", "%(node_high)s::bigint")}
"""
# What each spot reservation still holds from the preemption time on, in device-hours: a booked
# slice of a booked GPU is part of the GPU, not another device.
_COST_SQL = """
SELECT a.reservation_id,
       sum(extract(epoch FROM upper(b.during) - greatest(lower(b.during), %(at)s::timestamptz)) / 3600.0)
  FROM capacity_allocation a
  JOIN capacity_devicebooking b ON b.allocation_id = a.id
  JOIN inventory_device d ON d.id = b.device_id
 WHERE a.reservation_id = ANY(%(pks)s::bigint[]) AND upper(b.during) > %(at)s::timestamptz
   AND NOT EXISTS (SELECT 1 FROM capacity_devicebooking p WHERE p.allocation_id = a.id AND p.device_id = d.parent_id)
 GROUP BY 1
"""


@dataclass
class Holds:
    """What holds a pool in a window, split into regular work and each spot reservation."""

    taken: set[int]  # devices regular work holds (with parents and slices tied in)
    claims: dict[str, dict[str, list[tuple[int, int, int]]]]  # node -> resource -> regular claims
    spot_devices: dict[int, dict[str, set[int]]]  # spot reservation -> node -> devices (tied in)
    spot_claims: dict[int, dict[str, dict[str, list[tuple[int, int, int]]]]]  # reservation -> node -> ...
    cost: dict[int, float]  # spot reservation -> device-hours from the preemption time


@dataclass(frozen=True)
class Preemption:
    """The cheapest way to place a regular request by taking spot work back."""

    members: tuple[Ranked, ...]  # the node (or gang members) and the atoms to commit
    victims: tuple[int, ...]  # spot reservation pks, ascending
    at: datetime
    index: NodeIndex


def read_holds(
    pool_pk: int,
    index: PoolIndex,
    request: PlacementRequest,
    at: datetime,
    *,
    reclaim: bool = False,
    young: datetime | None = None,
) -> Holds:
    """Read the window's bookings and claims of the pool, regular and spot apart, and spot costs.

    With `reclaim`, other tenants' borrowing reservations count as spot work. Spot work whose first
    allocation starts after `young` (spotMinRuntime), and work already under notice, count as regular.

    Claims are read for the scalars the request claims; for a lease, which claims them all, of
    every scalar the pool's nodes have.
    """
    if request.lease:
        names = sorted({r for v in index.nodes.views for r in v.resources})
    else:
        names = sorted(r for r, n in request.resources.items() if n > 0)
    params = {
        **index.keys,
        "pool": pool_pk,
        "during": window_range(request.during),
        "names": names,
        "reclaim": reclaim,
        "tenant": request.tenant_id,
        "young": young,
    }
    spot: dict[int, set[int]] = defaultdict(set)
    claims: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    spot_claims: dict[int, dict[str, dict[str, list]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list))
    )
    with prepared_cursor() as cur:
        cur.execute(_HOLDS_SQL, params)
        booked, spot_booked, spot_owners = cur.fetchone()
        # A device held by anything but placed spot work in the window (a booking of regular
        # work, of an instance, or what is left of a released booking) cannot be freed.
        bookings = Counter(pk for pk in booked if pk in index.device_node)
        for pk, reservation in zip(spot_booked or (), spot_owners or (), strict=True):
            if pk in bookings:
                bookings[pk] -= 1
                spot[reservation].add(pk)
        regular = {pk for pk, n in bookings.items() if n > 0}
        cur.execute(_CLAIMS_SQL, params)
        for node_pk, resource, amount, s, e, reservation, is_spot in cur.fetchall():
            name = index.node_name.get(node_pk)
            if name is not None:
                target = spot_claims[reservation][name] if is_spot else claims[name]
                target[resource].append((s, e, amount))
        cost: dict[int, float] = {}
        pks = sorted(set(spot) | set(spot_claims))
        if pks:
            cur.execute(_COST_SQL, {"pks": pks, "at": at})
            cost = {pk: float(hours) for pk, hours in cur.fetchall()}
    spot_devices: dict[int, dict[str, set[int]]] = {}
    for reservation, devices in spot.items():
        by_node: dict[str, set[int]] = defaultdict(set)
        for pk in index.tie(devices):
            by_node[index.device_node[pk]].add(pk)
        spot_devices[reservation] = dict(by_node)
    return Holds(
        taken=index.tie(regular),
        claims={n: dict(r) for n, r in claims.items()},
        spot_devices=spot_devices,
        spot_claims={pk: {n: dict(r) for n, r in nodes.items()} for pk, nodes in spot_claims.items()},
        cost={pk: cost.get(pk, 0.0) for pk in pks},
    )


def preemption_time(request: PlacementRequest) -> datetime:
    """Return when spot work must make room: when the request starts.

    That is now, or later for a request that starts later (spot work runs until regular work
    needs the room), or a few minutes ago for a window that starts within the grace before now.
    """
    return to_datetime(request.during.start)


def find_lease_preemption(request: PlacementRequest, pool: PoolRow) -> Preemption | None:
    """Return the cheapest whole node (or gang) a regular lease could take by preempting spot work.

    A node qualifies when it is leasable but for spot work: no regular booking or claim in the
    window. Every spot reservation on it is preempted; the node whose spot work holds the fewest
    device-hours wins, ties by the lease score, then by name.
    """
    if not request.lease or (found := _spot_work(request, pool)) is None:
        return None
    index, at, holds = found
    regular = {index.device_node[pk] for pk in holds.taken} | set(holds.claims)
    busy = {node: Busy("the end of the window", {"regular work": 1}) for node in regular}
    relaxed = plan_lease(request, index.nodes.views, pool.view, busy)
    spot_on = _spot_on(holds)

    def cost(node: str) -> float:
        return sum(holds.cost[pk] for pk in spot_on.get(node, ()))

    ranked = sorted(relaxed.ranked, key=lambda r: (round(cost(r.node_id), 9), -r.score, r.node_id))
    if request.gang is None:
        members: tuple[Ranked, ...] = tuple(ranked[:1])
    else:
        key = request.gang.topology_key
        groups: dict[str | None, list[Ranked]] = defaultdict(list)
        for r in ranked:
            value = index.by_name[r.node_id].labels.get(key) if key else None
            if key is None or value is not None:
                groups[value].append(r)
        fitting = [g[: request.gang.size] for g in groups.values() if len(g) >= request.gang.size]
        best = min(
            fitting, key=lambda g: (round(sum(cost(r.node_id) for r in g), 9), g[0].node_id), default=[]
        )
        members = tuple(best)
    if not members:
        return None
    victims = sorted({pk for m in members for pk in spot_on.get(m.node_id, ())})
    return Preemption(members, tuple(victims), at, index.nodes)


def _spot_work(request: PlacementRequest, pool: PoolRow) -> tuple[PoolIndex, datetime, Holds] | None:
    """Return the pool's index, the preemption time and the window's holds, when a regular request
    could take spot work back at all (None otherwise)."""
    if request.priority != "regular" or pool.view.archived:
        return None
    index = pool_index(pool)
    at = preemption_time(request)
    young = rules.spares(pool, at)  # spot work younger than the pool's spotMinRuntime (policy.notice)
    reclaim = rules.reclaims(pool, request)  # borrowed GPUs of a guarantee, too (policy.borrowing)
    holds = read_holds(pool.pk, index, request, at, reclaim=reclaim, young=young)
    return (index, at, holds) if holds.cost else None


def _spot_on(holds: Holds) -> dict[str, list[int]]:
    """Return node -> the spot reservations holding something on it in the window, cheapest first."""
    spot_on: dict[str, list[int]] = defaultdict(list)
    for pk in holds.cost:
        for node in {*holds.spot_devices.get(pk, {}), *holds.spot_claims.get(pk, {})}:
            spot_on[node].append(pk)
    for pks in spot_on.values():
        pks.sort(key=lambda pk: (holds.cost[pk], pk))
    return spot_on


def find_preemption(request: PlacementRequest, pool: PoolRow, plan_with) -> Preemption | None:
    """Return the cheapest preemption that places a regular request, or None when none would.

    `plan_with(index, memo)` is the request's bound planner (capacity.placers.planning.Planner.bind).
    """
    if request.lease or (found := _spot_work(request, pool)) is None:
        return None
    index, at, holds = found
    window = request.during
    spot_on = _spot_on(holds)

    def fits_freeing(node: str, freed: set[int]) -> Ranked | None:
        taken = holds.taken & index.node_devices[node]
        claims = {r: list(v) for r, v in holds.claims.get(node, {}).items()}
        for pk in spot_on[node]:
            if pk not in freed:
                taken |= holds.spot_devices.get(pk, {}).get(node, set())
                for r, held in holds.spot_claims.get(pk, {}).get(node, {}).items():
                    claims.setdefault(r, []).extend(held)
        used = _used({node: claims}, window)
        found = plan_with(views_for(index, [node], taken, used), index.memo())
        return found.ranked[0] if found.ranked else None

    def cheapest(node: str) -> tuple[float, Ranked, set[int]] | None:
        freed: list[int] = []
        ranked = None
        for pk in spot_on[node]:
            freed.append(pk)
            ranked = fits_freeing(node, set(freed))
            if ranked is not None:
                break
        if ranked is None:
            return None
        for pk in sorted(freed[:-1], key=lambda p: -holds.cost[p]):  # drop what was not needed
            fewer = set(freed) - {pk}
            if (smaller := fits_freeing(node, fewer)) is not None:
                freed.remove(pk)
                ranked = smaller
        return sum(holds.cost[p] for p in freed), ranked, set(freed)

    if request.gang is not None:
        # A gang's members come from planning the pool with every spot booking counted free.
        names = [v.id for v in index.nodes.views]
        relaxed = plan_with(views_for(index, names, holds.taken, _used(holds.claims, window)), index.memo())
        if not relaxed.fits:
            return None
        chosen = [cheapest(m.node_id) for m in relaxed.gang]
        if any(c is None for c in chosen):
            return None
        victims = set().union(*(c[2] for c in chosen if c is not None))
        members = tuple(c[1] for c in chosen if c is not None)
        return Preemption(members, tuple(sorted(victims)), at, index.nodes)
    best: tuple[float, float, str, Ranked, set[int]] | None = None
    # Only a node with spot work on it can fit by preempting (the request did not fit as it is).
    # A node costs at least its cheapest spot reservation: nodes are tried cheapest bound first,
    # and the search stops once no bound can beat (or tie) the best found.
    allowed = index.allowed(pool, request.tenant_id, dict(request.node_labels)).names
    order = sorted(
        (holds.cost[pks[0]], node)
        for node, pks in spot_on.items()
        if node in allowed and node not in request.exclude_nodes
    )
    for bound, node in order:
        if best is not None and bound > best[0] + 1e-9:
            break
        found = cheapest(node)
        if found is None:
            continue
        cost, ranked, freed = found
        key = (round(cost, 9), -ranked.score, node)
        if best is None or key < (round(best[0], 9), best[1], best[2]):
            best = (cost, -ranked.score, node, ranked, freed)
    if best is None:
        return None
    return Preemption((best[3],), tuple(sorted(best[4])), at, index.nodes)


def _used(
    claims: Mapping[str, Mapping[str, list[tuple[int, int, int]]]], window
) -> dict[str, dict[str, int]]:
    return {
        node: {r: most for r, held in by_resource.items() if (most := peak(held, window.start, window.end))}
        for node, by_resource in claims.items()
    }


def with_preempted(plan: Plan, preemption: Preemption) -> Plan:
    """Return the plan as placed by preemption: the chosen members, best first."""
    members = preemption.members
    return dataclasses.replace(
        plan, ranked=members, choice=members[0], gang=members if plan.gang_size else ()
    )
