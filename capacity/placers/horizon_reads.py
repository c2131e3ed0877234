"""The DB half of the earliest start: one read of the pool's bookings and claims over the horizon.

What it reads is planned by horizon.py (no further SQL); the one window a request asked for is
planned as the placer would, the shortlist first (plan_if_it_fits).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from capacity.db.cursors import prepared_cursor
from capacity.db.literals import window_range
from capacity.placement import PlacementRequest, Plan, Window
from capacity.placement.earliest import Interval
from capacity.placers.types import PlacerConfig

from .horizon import Horizon, earliest_in, horizon_of
from .index import PoolIndex, pool_index
from .lease_reads import plan_lease_now
from .loader import PoolRow
from .planning import Planner, plan_shortlist, planner, uses_shortlist
from .reads import plan_reads, plan_request
from .sql import key_in

# The pool's bookings' bounds in epoch milliseconds as three arrays in one row (parsed in C; grouping
# by device in SQL costs more than it saves), date_part being about a third cheaper than extract,
# which computes in numeric; and the claims of the claimed resources.
_HORIZON_SQL = f"""
SELECT array_agg(device_id),
       array_agg((date_part('epoch', lower(during)) * 1000)::bigint),
       array_agg((date_part('epoch', upper(during)) * 1000)::bigint)
  FROM capacity_devicebooking
 WHERE during && %(during)s::tstzrange
   AND {key_in("device_id", "%(low)s::bigint", "%(high)s::bigint")}
"""
_CLAIMS_SQL = f"""
SELECT node_id, resource, (date_part('epoch', lower(during)) * 1000)::bigint,
       (date_part('epoch', upper(during)) * 1000)::bigint, amount
  FROM capacity_scalarclaim
 WHERE during && %(during)s::tstzrange AND resource = ANY(%(names)s::text[])
   AND {key_in("node_id", "%(node_low)s::bigint", "%(node_high)s::bigint")}
"""


def read_horizon(index: PoolIndex, window: Window, resources: Sequence[str]) -> Horizon:
    """Return every booking and claim of the pool overlapping `window` (one query, two with claims)."""
    params = {**index.keys, "during": window_range(window), "names": sorted(resources)}
    with prepared_cursor() as cur:
        cur.execute(_HORIZON_SQL, params)
        devices, starts, ends = cur.fetchone()
        busy: dict[int, list[Interval]] = defaultdict(list)
        for pk, s, e in zip(devices or (), starts or (), ends or (), strict=True):
            busy[pk].append((s, e))
        claims = []
        if resources:  # most requests claim no scalar: no second statement
            cur.execute(_CLAIMS_SQL, params)
            claims = cur.fetchall()
    return horizon_of(
        index, busy, [(index.node_name.get(node), name, s, e, n) for node, name, s, e, n in claims]
    )


def find_earliest(
    request: PlacementRequest, pool: PoolRow, config: PlacerConfig, latest: int, built: Planner | None = None
) -> tuple[Window, Plan] | None:
    """Return the earliest window (the request's length, starting by `latest`) that fits, and its plan.

    The plan is the one the placer would make for that window, over the nodes that could take it.
    """
    built = Planner.of(request, pool, config, built)
    index = pool_index(pool)
    duration = request.during.end - request.during.start
    start = request.during.start
    # A lease needs every claim of its node; other requests only those of what they claim.
    resources = (
        {r for v in index.nodes.views for r in v.resources}
        if request.lease
        else {r for r, n in request.resources.items() if n > 0}
    )
    horizon = read_horizon(index, Window(start, latest + duration), sorted(resources))
    return earliest_in(request, pool, config, index, horizon, latest, built)


def plan_if_it_fits(
    request: PlacementRequest, pool: PoolRow, config: PlacerConfig, built: Planner | None = None
) -> Plan | None:
    """Return the placer's plan for the request's own window when it fits there, else None.

    The shortlist answers most requests; a refusal is not explained (no plan of every node).
    """
    if request.lease:
        plan, _static = plan_lease_now(request, pool)
        return plan if plan.fits else None
    if not uses_shortlist(request, config):
        plan, _index = plan_request(request, pool, config, built=built)
        return plan if plan.fits else None
    static = pool_index(pool)
    taken, short, used = plan_reads(static, request.during, request.resources)
    found = plan_shortlist(
        request, pool, config, static, taken, short, used, planner(request, pool, config, built), protect=10
    )
    return found[0] if found is not None else None
