"""Whole-node leases against the database: what holds each node in a window, and the guarded commit.

Leases place inline under both placers, as gangs do: the caller needs an answer at once. The plan
comes from capacity.placement.lease; the commit is the placer's own guarded commit, booking every
device of the node and claiming its whole scalar room, so the EXCLUDE constraint and the scalar
guard decide a race with any other booking exactly as they do for device requests.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime

from capacity.db.cursors import prepared_cursor
from capacity.db.literals import to_datetime, window_range
from capacity.placement import ARCHIVED_REASON, PlacementRequest, Plan, Ranked, Window
from capacity.placement.lease import Busy, lease_demand, plan_lease, scalar_room, top_level

from .attempt import Way, attempt, commit_members
from .commit import Committed, Owner
from .index import PoolIndex, pool_index
from .loader import NodeIndex, PoolRow
from .preempt import find_lease_preemption
from .sql import key_in
from .types import Outcome, PlacerConfig

# Per node of the pool: top-level devices booked in the window per class, and when the last
# booking ends; then per node the scalars claimed in the window, and when the last claim ends.
_BUSY_SQL = f"""
SELECT d.node_id, coalesce(p.device_class, d.device_class), count(DISTINCT coalesce(d.parent_id, d.id)),
       (date_part('epoch', max(upper(b.during))) * 1000)::bigint
  FROM capacity_devicebooking b
  JOIN inventory_device d ON d.id = b.device_id
  LEFT JOIN inventory_device p ON p.id = d.parent_id
 WHERE b.during && %(during)s::tstzrange
   AND {key_in("b.device_id", "%(low)s::bigint", "%(high)s::bigint")}
 GROUP BY 1, 2
"""
_CLAIMED_SQL = f"""
SELECT c.node_id, array_agg(DISTINCT c.resource ORDER BY c.resource),
       (date_part('epoch', max(upper(c.during))) * 1000)::bigint
  FROM capacity_scalarclaim c
 WHERE c.during && %(during)s::tstzrange
   AND {key_in("c.node_id", "%(node_low)s::bigint", "%(node_high)s::bigint")}
 GROUP BY 1
"""


def read_busy(index: PoolIndex, window: Window) -> dict[str, Busy]:
    """Return, for each node of the pool with a booking or claim in the window, what holds it."""
    params = {**index.keys, "during": window_range(window)}
    devices: dict[str, dict[str, int]] = defaultdict(dict)
    scalars: dict[str, tuple[str, ...]] = {}
    until: dict[str, int] = {}
    with prepared_cursor() as cur:
        cur.execute(_BUSY_SQL, params)
        for node_pk, device_class, count, end in cur.fetchall():
            name = index.node_name.get(node_pk)
            if name is not None:
                devices[name][device_class] = count
                until[name] = max(until.get(name, 0), end)
        cur.execute(_CLAIMED_SQL, params)
        for node_pk, resources, end in cur.fetchall():
            name = index.node_name.get(node_pk)
            if name is not None:
                scalars[name] = tuple(resources)
                until[name] = max(until.get(name, 0), end)
    return {
        name: Busy(iso_minute(end), dict(devices.get(name, {})), scalars.get(name, ()))
        for name, end in until.items()
    }


def plan_lease_now(request: PlacementRequest, pool: PoolRow) -> tuple[Plan, PoolIndex]:
    """Plan a lease on plain reads: the pool's static views and what holds each node in the window."""
    index = pool_index(pool)
    plan = plan_lease(request, index.nodes.views, pool.view, read_busy(index, request.during))
    return plan, index


def place_lease(
    request: PlacementRequest,
    pool: PoolRow,
    owner: Owner,
    config: PlacerConfig,
    *,
    charge: Callable[[Mapping[str, int]], None],
    now: datetime | None = None,
) -> Outcome:
    """Lease the best leasable node (or gang of nodes) in the caller's transaction.

    `charge(amounts)` charges quota for the nodes chosen (their atoms and scalars) before the
    commit takes the pool lock, and raises to refuse; a lost race rolls both back and plans again
    without the node.
    """
    if pool.view.archived:
        return Outcome("pending", reason=ARCHIVED_REASON)
    static = pool_index(pool)

    def plan(req: PlacementRequest) -> tuple[Plan, NodeIndex]:
        found, index = plan_lease_now(req, pool)
        return found, index.nodes

    def commit(
        req: PlacementRequest, members: Sequence[Ranked], index: NodeIndex, savepoint: str | None
    ) -> list[Committed]:
        def whole(member: Ranked) -> dict:
            view, usable = static.by_name[member.node_id], set(member.atoms[0])
            return {
                "also_book": tuple(d for d in top_level(view) if d not in usable),
                "lease_claims": scalar_room(view),
            }

        return commit_members(req, members, pool, index, owner, now, savepoint, extra=whole)

    way = Way(
        savepoint="capacity_lease",
        plan=plan,
        preemption=lambda req: find_lease_preemption(req, pool),
        commit=commit,
        charge=lambda members, _index: charge(lease_demand([static.by_name[m.node_id] for m in members])),
        pool=pool,
    )
    return attempt(request, way, owner, config, now)


def iso_minute(ms: int) -> str:
    """Return an epoch-millisecond time as 2026-12-04T10:00Z."""
    return to_datetime(ms).strftime("%Y-%m-%dT%H:%MZ")
