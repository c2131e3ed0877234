"""A window's reads for the inline placer (the devices booked in it, the scalars claimed in it) and
the plan on them, plan_request. One statement, which can be sent ahead in the pipeline of the one
that inserts the reservation (`send_reads`): one round trip fewer per inline placement.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import compress

from capacity.db.cursors import prepared_cursor
from capacity.db.literals import text_array, window_literal
from capacity.placement import PlacementRequest, Plan, Window
from capacity.placers.claims import WindowUse

from .claims import CLAIM_ORDER, Claims
from .index import PoolIndex, Short, pool_index, views_for
from .loader import NodeIndex, PoolRow, load_node_views
from .planning import Planner, plan_shortlist, planner, uses_shortlist
from .sql import key_in
from .types import PlacerConfig

# The window's bookings of the pool's range of device keys, from the EXCLUDE constraint's GiST
# index over both (key_in), narrowed to its devices in Python: cheaper than joining devices and
# nodes. The claims of the claimed resources, sorted by node; the one-time filter skips their scan
# for requests that claim no scalar. Arrays in one row: the driver parses them in C; each sorts by
# the whole claim (CLAIM_ORDER), so the arrays stay in step.
_READS_SQL = f"""
SELECT ARRAY(SELECT device_id FROM capacity_devicebooking
              WHERE during && %(during)s::tstzrange
                AND {key_in("device_id", "%(low)s::bigint", "%(high)s::bigint")}),
       c.nodes, c.names, c.starts, c.ends, c.amounts
  FROM (SELECT array_agg(node_id ORDER BY {CLAIM_ORDER}) AS nodes,
               array_agg(resource ORDER BY {CLAIM_ORDER}) AS names,
               array_agg(lo ORDER BY {CLAIM_ORDER}) AS starts,
               array_agg(hi ORDER BY {CLAIM_ORDER}) AS ends,
               array_agg(amount ORDER BY {CLAIM_ORDER}) AS amounts
          FROM (SELECT node_id, resource, amount, (date_part('epoch', lower(during)) * 1000)::bigint AS lo,
                       (date_part('epoch', upper(during)) * 1000)::bigint AS hi
                  FROM capacity_scalarclaim
                 WHERE cardinality(%(names)s::text[]) > 0 AND during && %(during)s::tstzrange
                   AND resource = ANY(%(names)s::text[])
                   AND {key_in("node_id", "%(node_low)s::bigint", "%(node_high)s::bigint")}) AS w) AS c
"""


class Reads:
    """A window's reads, sent and not yet taken."""

    def __init__(self, index: PoolIndex, window: Window, claims: Mapping[str, int]):
        self.index = index
        self.window = window
        self.claims = dict(claims)
        self.claimed = sorted(r for r, n in claims.items() if n > 0)
        self.savepoint: str | None = None  # set after the reads were sent (inline.send_ahead)
        self.cursor = prepared_cursor(binary=True)
        self.cursor.execute(
            _READS_SQL, {**index.keys, "during": window_literal(window), "names": text_array(self.claimed)}
        )

    def answers(self, index: PoolIndex, window: Window, claims: Mapping[str, int]) -> bool:
        """Return whether these reads are the ones a plan of this window and claims needs."""
        return index is self.index and window == self.window and dict(claims) == self.claims

    def take(self) -> tuple[set[int], Short, WindowUse]:
        """Return the devices not free for the window, the nodes short of a claimed scalar and what is used.

        A booked GPU takes its slices, and a booked slice takes its GPU. A node is short when its
        capacity in a claimed resource minus the most claimed at any instant of the window is below
        the claim, or it has no such resource at all; `used` holds that most-claimed figure for the
        nodes with claims in the window.
        """
        try:
            booked_pks, nodes, names, starts, ends, amounts = self.cursor.fetchone()
        finally:
            self.cursor.close()
        index = self.index
        device_node = index.device_node
        booked = set(compress(booked_pks, map(device_node.__contains__, booked_pks)))  # the pool's own
        held = Claims(
            index.nodes.node_pk,
            index.node_name,
            nodes or [],
            names or [],
            starts or [],
            ends or [],
            amounts or [],
        )
        used = WindowUse(held, self.window, self.claimed)
        return index.tie_into(booked), index.short(self.claims, used), used

    def close(self) -> None:
        """Drop the reads unread (the plan did not need them)."""
        self.cursor.close()


def send_reads(index: PoolIndex, window: Window, claims: Mapping[str, int]) -> Reads:
    """Send a window's reads without waiting for them (inside the caller's pipeline, if any)."""
    return Reads(index, window, claims)


def plan_reads(
    index: PoolIndex, window: Window, claims: Mapping[str, int]
) -> tuple[set[int], Short, WindowUse]:
    """Read a window's booked devices, short nodes and scalar use (see Reads.take)."""
    return Reads(index, window, claims).take()


def plan_request(
    request: PlacementRequest,
    pool: PoolRow,
    config: PlacerConfig,
    *,
    shortlist: bool | None = None,
    protect: int = 0,
    reads: Reads | None = None,
    built: Planner | None = None,
) -> tuple[Plan, NodeIndex]:
    """Plan on plain reads: the shortlist when it gives the same top N, else every node of the pool.

    `protect` widens what the shortlist must get right to the best `protect` nodes when that is
    more than top N (a preview shows its first ten candidates). `reads`, sent ahead by the caller,
    are used when they are this plan's (else dropped and read again). `built`: the request's planner.
    """
    plan = planner(request, pool, config, built)

    if shortlist is None:
        shortlist = uses_shortlist(request, config)
    if pool.view.archived:
        if reads is not None:
            reads.close()
        index = load_node_views(pool.pk, request.during)
        return plan(index), index
    static = pool_index(pool)
    if reads is not None and reads.answers(static, request.during, request.resources):
        taken, short, used = reads.take()
    else:
        if reads is not None:
            reads.close()
        taken, short, used = plan_reads(static, request.during, request.resources)
    if shortlist:
        found = plan_shortlist(request, pool, config, static, taken, short, used, plan, protect=protect)
        if found is not None:
            return found
    # Every node (no shortlist, or nothing fits and the pending reason needs them all), planned from
    # the pool's cached index and the window's reads: loading every node's rows again cost a
    # 1,000-node pool's preview with `explain` 0.27 s (bench_scale).
    index = views_for(static, [v.id for v in static.nodes.views], taken, used)
    return plan(index, static.memo()), index
