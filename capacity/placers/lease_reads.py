"""What holds each node of a pool in a window, and the lease planned on those plain reads.

Apart from the lease placer (lease.py) so that readers that only plan (earliest start, preview, what
if) do not load the attempt loop, preemption and the guarded commit.
"""

from __future__ import annotations

from collections import defaultdict

from capacity.db.cursors import prepared_cursor
from capacity.db.literals import to_datetime, window_range
from capacity.placement import PlacementRequest, Plan, Window
from capacity.placement.lease import Busy, plan_lease

from .index import PoolIndex, pool_index
from .loader import PoolRow
from .sql import key_in

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


def iso_minute(ms: int) -> str:
    """Return an epoch-millisecond time as 2026-12-04T10:00Z."""
    return to_datetime(ms).strftime("%Y-%m-%dT%H:%MZ")
